package store

import (
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	icetable "github.com/apache/iceberg-go/table"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/meterstore/meterstore/catalog"
	"github.com/meterstore/meterstore/catalog/rest"
	"github.com/meterstore/meterstore/config"
	"github.com/meterstore/meterstore/consensus"
	"github.com/meterstore/meterstore/consensus/postgres"
	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/internal/pgtest"
)

// TestOpenConfigCatalogs opens a deployment from its configuration with
// each catalog it can select, then writes, archives and queries both
// tiers through it. Through each, a commit that would move the watermark
// back is refused: the REST catalog is served without a check of its own,
// so there as with the SQL catalog only the guard OpenCatalog installs
// stands in the way.
func TestOpenConfigCatalogs(t *testing.T) {
	for _, c := range []struct{ name, section string }{
		{"log in PostgreSQL", `log = "postgres"`},
		{"log on the warehouse", `log = "object_store"`},
		{"iceberg-go SQL catalog", `type = "sql"`},
		{"Iceberg REST catalog", `type = "rest"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := t.Context()
			url, dir := pgtest.NewDB(t), t.TempDir()
			section := c.section
			if c.name == "Iceberg REST catalog" {
				section += fmt.Sprintf("\nuri = %q", restServer(t, url, filepath.Join(dir, "served")))
			}
			text := fmt.Sprintf(`
[postgres]
url = %q
data_dir = %q
[warehouse]
url = %q
[catalog]
%s
[archive]
settlement_lag = "2d"
archival_step = "1d"
[[table]]
name = "power"
commodity = "STROM"
resolutions = ["PT15M"]
headroom = "2d"
  [[table.column]]
  name = "channel"
  identity = true
  values = ["A", "B"]
`, url, dir, "file://"+filepath.Join(dir, "wh"), section)
			cfg, err := config.Parse([]byte(text), dir, nil)
			if err != nil {
				t.Fatal(err)
			}
			s, err := OpenConfig(ctx, cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if err := s.CreatePartitions(ctx, dayN(0), dayN(4)); err != nil {
				t.Fatal(err)
			}
			for d := range 4 {
				mustWrite(t, s, []Reading{qh(1, d, 4, "A", 1, 1000), qh(1, d, 5, "B", 1, 2000)})
			}
			out, err := s.Archive(ctx, "power", dayN(4))
			if err != nil || len(out.Windows) != 2 || !out.Watermark.Equal(dayN(2)) {
				t.Fatalf("archive: %+v, %v", out, err)
			}
			res := mustQuery(t, s, `SELECT count(*), CAST(sum(value) AS VARCHAR) FROM readings`)
			if res.Rows[0][0] != int64(8) || res.Rows[0][1] != "0.012000" || !slices.Equal(res.Tiers, []string{"cold", "hot"}) {
				t.Errorf("query: %v from %v", res.Rows[0], res.Tiers)
			}
			tbl, err := s.opts.Catalog.LoadTable(ctx, icetable.Identifier{cold.DefaultNamespace, "power"})
			if err != nil {
				t.Fatal(err)
			}
			tx := tbl.NewTransaction()
			back := iceberg.Properties{cold.SummaryWatermark: cold.FormatTime(dayN(1))}
			if err := tx.AddFiles(ctx, nil, back, true); err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Commit(ctx); err == nil || !strings.Contains(err.Error(), cold.ErrWatermarkBackwards.Error()) {
				t.Errorf("a commit moving W from day 2 to day 1: %v, want it refused", err)
			}
			if w, _, err := s.Watermark(ctx, "power"); err != nil || !w.Equal(dayN(2)) {
				t.Errorf("W after the refused commit: %v, %v; want day 2", w, err)
			}
		})
	}
}

// restServer serves a MeterStore catalog, on a log in the database at url
// and a warehouse in dir, writable over the Iceberg REST protocol, without
// a commit check: a foreign REST catalog knows nothing of watermarks.
func restServer(t *testing.T, url, dir string) string {
	t.Helper()
	pcfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	l, err := postgres.Open(t.Context(), pcfg, postgres.Options{Schema: "served"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	wh, err := catalog.OpenWarehouse(t.Context(), "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { wh.Bucket.Close() })
	cat, err := catalog.New(catalog.Options{Warehouse: wh, Log: l})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(rest.WritableHandler(cat, nil))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestOpenGuardsCatalog opens a Store on a catalog opened without the
// watermark check: Open installs it, and a commit moving W back is refused.
func TestOpenGuardsCatalog(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	bare, err := catalog.New(catalog.Options{Warehouse: mustWarehouse(t, e.dir), Log: consensus.NewMemory()})
	if err != nil {
		t.Fatal(err)
	}
	e.cat = bare
	s := e.open(t, Options{})
	if err := s.CreatePartitions(ctx, dayN(0), dayN(4)); err != nil {
		t.Fatal(err)
	}
	for d := range 3 {
		mustWrite(t, s, []Reading{qh(1, d, 4, "A", 1, 1000)})
	}
	if out, err := s.Archive(ctx, "power", dayN(4)); err != nil || !out.Watermark.Equal(dayN(2)) {
		t.Fatalf("archive: %+v, %v", out, err)
	}
	tbl, err := s.opts.Catalog.LoadTable(ctx, icetable.Identifier{cold.DefaultNamespace, "power"})
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.AddFiles(ctx, nil, iceberg.Properties{cold.SummaryWatermark: cold.FormatTime(dayN(1))}, true); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); !errors.Is(err, cold.ErrWatermarkBackwards) {
		t.Errorf("a commit moving W back through the store's catalog: %v, want it refused", err)
	}
}

func mustWarehouse(t *testing.T, dir string) catalog.Warehouse {
	t.Helper()
	dir = filepath.Join(dir, "bare")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	wh, err := catalog.OpenWarehouse(t.Context(), "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { wh.Bucket.Close() })
	return wh
}

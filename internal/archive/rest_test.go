package archive

import (
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog/rest"
	icetable "github.com/apache/iceberg-go/table"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/meterstore/meterstore/catalog"
	restcatalog "github.com/meterstore/meterstore/catalog/rest"
	"github.com/meterstore/meterstore/consensus/postgres"
	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/internal/hot"
	"github.com/meterstore/meterstore/internal/pgtest"
)

// TestCycleOverIcebergRESTCatalog archives through iceberg-go's own REST
// catalog client, pointed at MeterStore's catalog served over the Iceberg
// REST protocol (WritableHandler, on 127.0.0.1) with its log on PostgreSQL.
// Unlike over the SQL catalog, the watermark rule is enforced behind the
// REST server, inside the compare-and-set, so a commit moving W backwards
// is refused whichever client sends it.
func TestCycleOverIcebergRESTCatalog(t *testing.T) {
	ctx := t.Context()
	url := pgtest.NewDB(t)
	dir := t.TempDir()
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	wh, err := catalog.OpenWarehouse(ctx, "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { wh.Bucket.Close() })
	pcfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	l, err := postgres.Open(ctx, pcfg, postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	served, err := catalog.New(catalog.Options{Warehouse: wh, Log: l, Check: cold.WatermarkCheck()})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(restcatalog.WritableHandler(served, nil))
	t.Cleanup(srv.Close)
	cat, err := rest.NewCatalog(ctx, "rest", srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cat.Close() })

	h, err := hot.New(pool, hot.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := cold.New(cat, cold.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{url: url, dir: dir, pool: pool, hot: h, cold: c, t: lastgang()}
	if err := h.Ensure(ctx, e.t); err != nil {
		t.Fatal(err)
	}
	if e.ct, err = c.Ensure(ctx, e.t); err != nil {
		t.Fatal(err)
	}
	if _, err := h.CreatePartitions(ctx, e.t, dayN(0), dayN(4)); err != nil {
		t.Fatal(err)
	}
	o := newOracle()
	fill(t, e, o, 3, 0, 1, 2, 3, 4)
	a := e.archiver(t, dayConfig)
	out, err := a.Cycle(ctx, e.t, e.ct, dayN(4))
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != Archived || len(out.Windows) != 3 || !out.Watermark.Equal(dayN(3)) {
		t.Fatalf("cycle over the REST catalog: %+v, want days 0 to 2 archived", out)
	}
	w, ok, err := c.Watermark(ctx, e.ct)
	if err != nil || !ok || !w.Equal(out.Watermark) {
		t.Fatalf("watermark read back through REST: %v %v %v, want %v", w, ok, err, out.Watermark)
	}
	checkTiers(t, e, o.snapshot())

	// The REST server is a view of the log: the catalog in process reads
	// the same W, and every commit is an entry of the table's log.
	ident := e.ct.Identifier()
	local, err := served.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	if lw, ok, err := cold.Watermark(local.Metadata()); err != nil || !ok || !lw.Equal(out.Watermark) {
		t.Fatalf("watermark in the log: %v %v %v, want %v", lw, ok, err, out.Watermark)
	}
	hist, err := served.History(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	if last := hist[len(hist)-1].MetadataLocation; last != local.MetadataLocation() {
		t.Fatalf("the log ends at %s, the table is at %s", last, local.MetadataLocation())
	}

	// A commit moving W backwards, sent through iceberg-go's REST client
	// like any foreign engine would, is refused behind the server: the
	// client sees iceberg-go's commit failure, and nothing lands.
	ice, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	tx := ice.NewTransaction()
	if err := tx.AddFiles(ctx, nil, iceberg.Properties{cold.SummaryWatermark: cold.FormatTime(dayN(1))}, true); err != nil {
		t.Fatal(err)
	}
	_, err = tx.Commit(ctx)
	if !errors.Is(err, icetable.ErrCommitFailed) || !errors.Is(err, rest.ErrCommitFailed) ||
		!strings.Contains(err.Error(), "refused") || !strings.Contains(err.Error(), cold.FormatTime(dayN(3))) {
		t.Fatalf("commit moving W from day 3 to day 1 through REST: %v, want a refused commit", err)
	}
	if after, err := served.History(ctx, ident); err != nil || len(after) != len(hist) {
		t.Fatalf("the refused commit reached the log: %d entries, before %d (%v)", len(after), len(hist), err)
	}
	if w, _, err := c.Watermark(ctx, e.ct); err != nil || !w.Equal(dayN(3)) {
		t.Fatalf("watermark after the refused commit: %v %v", w, err)
	}

	// The next cycle goes on from W, through REST as well.
	out, err = a.Cycle(ctx, e.t, e.ct, dayN(5))
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != Archived || len(out.Windows) != 1 || !out.Watermark.Equal(dayN(4)) {
		t.Fatalf("second cycle over the REST catalog: %+v, want day 3 archived", out)
	}
	checkTiers(t, e, o.snapshot())
}

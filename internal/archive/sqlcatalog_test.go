package archive

import (
	"database/sql"
	"testing"

	"github.com/apache/iceberg-go"
	icesql "github.com/apache/iceberg-go/catalog/sql"
	"github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx" for iceberg-go's SQL catalog
	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/internal/hot"
	"github.com/meterstore/meterstore/internal/pgtest"
)

// TestCycleOverIcebergSQLCatalog archives through iceberg-go's own SQL
// (JDBC-layout) catalog on PostgreSQL instead of MeterStore's log catalog:
// the cold tier takes any iceberg-go catalog, and guards it with the
// watermark check (catalog.Guard) pinned to the snapshot it checked; see
// TestWatermarkReplayRefused.
func TestCycleOverIcebergSQLCatalog(t *testing.T) {
	ctx := t.Context()
	url := pgtest.NewDB(t)
	dir := t.TempDir()
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	cat, err := icesql.NewCatalog("meterstore", db, icesql.Postgres, iceberg.Properties{"warehouse": "file://" + dir})
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
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
	if _, err := h.CreatePartitions(ctx, e.t, dayN(0), dayN(3)); err != nil {
		t.Fatal(err)
	}
	o := newOracle()
	fill(t, e, o, 3, 0, 1, 2, 3)
	a := e.archiver(t, dayConfig)
	out, err := a.Cycle(ctx, e.t, e.ct, dayN(4))
	if err != nil {
		t.Fatal(err)
	}
	if out.Status != Archived || len(out.Windows) == 0 {
		t.Fatalf("cycle over the SQL catalog: %+v", out)
	}
	w, ok, err := c.Watermark(ctx, e.ct)
	if err != nil || !ok || !w.Equal(out.Watermark) {
		t.Fatalf("watermark read back through the SQL catalog: %v %v %v, want %v", w, ok, err, out.Watermark)
	}
	var n int
	// The table's daily rollup has its name in a namespace of its own.
	if err := pool.QueryRow(ctx, "SELECT count(*) FROM iceberg_tables WHERE table_namespace = $1 AND table_name = $2",
		e.ct.Identifier()[0], e.t.Name).Scan(&n); err != nil || n != 1 {
		t.Fatalf("iceberg_tables rows for %s: %d, %v", e.t.Name, n, err)
	}
	checkTiers(t, e, o.snapshot())
}

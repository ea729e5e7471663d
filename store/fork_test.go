package store

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/jackc/pgx/v5/pgxpool"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/meterstore/meterstore/catalog"
	"github.com/meterstore/meterstore/consensus/postgres"
	"github.com/meterstore/meterstore/internal/hadooptest"
	"github.com/meterstore/meterstore/internal/pgtest"
)

// lockedBuffer is a log destination shared by goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestForeignMirrorCommit plays Spark with a Hadoop catalog on the
// warehouse of a running deployment: it appends a data file to the power
// table and commits the next v<N>.metadata.json and the hint as
// HadoopTableOperations does. Status must name the table unhealthy with
// the file, the metric and the log must count and name it, the next
// archival must neither overwrite the file nor move the hint over it nor
// lose a row, verify must report it, and resolving it must make the table
// healthy again with the foreign file kept.
func TestForeignMirrorCommit(t *testing.T) {
	ctx := t.Context()
	var logs lockedBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	e := newEnvLogged(t, log)
	reader := sdkmetric.NewManualReader()
	s := e.open(t, Options{Logger: log, Meters: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	pw := s.tables[0].decl
	if _, err := s.hot.CreatePartitions(ctx, pw, dayN(0), dayN(6)); err != nil {
		t.Fatal(err)
	}
	var rows []Reading
	for d := range 4 {
		for slot := range 4 {
			rows = append(rows, qh(1, d, slot, "A", 1, int64(100*d+slot)))
		}
	}
	mustWrite(t, s, rows)
	if out, err := s.Archive(ctx, "power", dayN(4)); err != nil || len(out.Windows) != 2 {
		t.Fatalf("archive: %v, %+v", err, out)
	}
	if st := s.Status(ctx, dayN(4))[0]; !st.Healthy || st.MirrorForks != 0 {
		t.Fatalf("before the foreign commit: %+v", st)
	}

	// The foreign writer appends one row in a data file of its own.
	hw := &hadooptest.Writer{Dir: filepath.Join(e.dir, "meterstore", "power")}
	ident := s.tables[0].cold.Identifier()
	ft, err := hw.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	scanned, err := ft.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	one := firstRow(t, scanned)
	scanned.Release()
	tx := ft.NewTransaction()
	if err := tx.AppendTable(ctx, one, 1, nil); err != nil {
		t.Fatal(err)
	}
	one.Release()
	if ft, err = tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	k, err := hw.Version()
	if err != nil {
		t.Fatal(err)
	}
	file := strings.TrimPrefix(hw.MetadataFile(k), e.dir+"/")
	foreign, err := os.ReadFile(hw.MetadataFile(k))
	if err != nil {
		t.Fatal(err)
	}

	// Status, the metric and the log name it.
	st := s.Status(ctx, dayN(4))[0]
	var fe *catalog.ForkError
	if st.Healthy || st.MirrorForks != 1 || !errors.As(st.Err, &fe) || !strings.Contains(st.Err.Error(), file) {
		t.Fatalf("status after a foreign commit: healthy %v, forks %d, err %v; want unhealthy naming %s", st.Healthy, st.MirrorForks, st.Err, file)
	}
	if fe.Forks[0].SnapshotID != ft.CurrentSnapshot().SnapshotID || fe.Forks[0].Records != 9 {
		t.Errorf("fork %+v, want snapshot %d with 9 records", fe.Forks[0], ft.CurrentSnapshot().SnapshotID)
	}
	if got := gaugeValue(t, reader, "meterstore.table.mirror_forks"); got != 1 {
		t.Errorf("meterstore.table.mirror_forks = %d, want 1", got)
	}
	if !strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "file="+file) {
		t.Errorf("no error log line names %s:\n%s", file, logs.String())
	}
	// Logged when found, not on every status (a readiness probe runs one).
	const found = `msg="store: a commit MeterStore did not make`
	if n := strings.Count(logs.String(), found); n != 1 {
		t.Errorf("the fork was logged %d times by status, want 1", n)
	}
	if st := s.Status(ctx, dayN(4))[0]; st.MirrorForks != 1 || strings.Count(logs.String(), found) != 1 {
		t.Errorf("a second status: forks %d, logged %d times", st.MirrorForks, strings.Count(logs.String(), found))
	}
	if err := s.RefreshSystemTables(ctx, dayN(4)); err != nil && !strings.Contains(err.Error(), "snapshots") {
		t.Fatal(err)
	}
	res := mustQuery(t, s, `SELECT healthy, error FROM system.tables`)
	if res.Rows[0][0] != false || !strings.Contains(res.Rows[0][1].(string), file) {
		t.Errorf("system.tables: %v, want unhealthy naming %s", res.Rows[0], file)
	}

	// MeterStore's next archivals (its versions k and k+1) commit to its
	// log and leave the fork.
	for _, now := range []time.Time{dayN(5), dayN(6)} {
		if out, err := s.Archive(ctx, "power", now); err != nil || len(out.Windows) != 1 {
			t.Fatalf("archive at %v after the fork: %v, %+v", now, err, out)
		}
	}
	if got, err := os.ReadFile(hw.MetadataFile(k)); err != nil || !bytes.Equal(got, foreign) {
		t.Fatalf("the foreign %s was overwritten or removed (%v)", file, err)
	}
	if n, err := hw.Version(); err != nil || n != k {
		t.Fatalf("a Hadoop reader now finds version %d (%v), want the foreign %d", n, err, k)
	}
	res = mustQuery(t, s, `SELECT count(*), sum(value) FROM readings_versions`)
	if res.Rows[0][0] != int64(len(rows)) {
		t.Fatalf("MeterStore holds %v readings after the fork, want %d", res.Rows[0][0], len(rows))
	}
	if w, _, err := s.Watermark(ctx, "power"); err != nil || !w.Equal(dayN(4)) {
		t.Fatalf("watermark %v, %v; want %v", w, err, dayN(4))
	}

	vs := s.Verify(ctx, VerifyOptions{})
	if len(vs[0].Forks) != 1 || vs[0].Forks[0].File != file || vs[0].OK() {
		t.Fatalf("verify: forks %v, problems %v", vs[0].Forks, vs[0].Problems)
	}

	// The operator resolves it; the foreign file is kept aside.
	moved, err := s.ResolveForks(ctx, "power")
	if err != nil || len(moved) != 1 || moved[0].File != file {
		t.Fatalf("ResolveForks: %v, %v", moved, err)
	}
	kept, _ := filepath.Glob(filepath.Join(hw.Dir, "metadata", catalog.ForkDir, "*"))
	if len(kept) != 1 {
		t.Fatalf("kept aside: %v", kept)
	}
	if got, _ := os.ReadFile(kept[0]); !bytes.Equal(got, foreign) {
		t.Fatal("the file kept aside is not the foreign one")
	}
	if st := s.Status(ctx, dayN(6))[0]; !st.Healthy || st.MirrorForks != 0 {
		t.Fatalf("after ResolveForks: %+v", st)
	}
	if got := gaugeValue(t, reader, "meterstore.table.mirror_forks"); got != 0 {
		t.Errorf("meterstore.table.mirror_forks = %d after ResolveForks, want 0", got)
	}
	if vs := s.Verify(ctx, VerifyOptions{}); !vs[0].OK() {
		t.Fatalf("verify after ResolveForks: %v %v", vs[0].Problems, vs[0].Err)
	}
}

// newEnvLogged is newEnv with the catalog logging to log.
func newEnvLogged(t *testing.T, log *slog.Logger) *testEnv {
	t.Helper()
	ctx := t.Context()
	cfg, err := pgxpool.ParseConfig(pgtest.NewDB(t))
	if err != nil {
		t.Fatal(err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	dir := t.TempDir()
	wh, err := catalog.OpenWarehouse(ctx, "file://"+dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { wh.Bucket.Close() })
	cat, closeCat, err := OpenCatalog(ctx, CatalogOptions{Warehouse: wh, Postgres: cfg,
		LogOptions: postgres.Options{Schema: "meterstore"}, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeCat)
	return &testEnv{pool: pool, cat: cat, dir: dir}
}

// firstRow returns a table of the first row of at.
func firstRow(t *testing.T, at arrow.Table) arrow.Table {
	t.Helper()
	tr := array.NewTableReader(at, 1)
	defer tr.Release()
	if !tr.Next() {
		t.Fatal("the cold table is empty")
	}
	rec := tr.RecordBatch()
	return array.NewTableFromRecords(rec.Schema(), []arrow.RecordBatch{rec})
}

// gaugeValue returns the int gauge name's value for the power table.
func gaugeValue(t *testing.T, reader *sdkmetric.ManualReader, name string) int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if g, ok := m.Data.(metricdata.Gauge[int64]); ok && m.Name == name {
				for _, p := range g.DataPoints {
					if v, _ := p.Attributes.Value("table"); v.AsString() == "power" {
						return p.Value
					}
				}
			}
		}
	}
	t.Fatalf("%s not recorded", name)
	return 0
}

package store

import (
	"fmt"
	"testing"
	"time"

	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/meterstore/meterstore/catalog"
	"github.com/meterstore/meterstore/consensus/postgres"
	"github.com/meterstore/meterstore/internal/pgtest"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// day0 is the first day the tests write.
var day0 = time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)

func dayN(n int) time.Time { return day0.AddDate(0, 0, n) }

// power declares a daily-partitioned quarter-hour table with an identity
// column, so that resolution has to keep its series apart.
func power() Table {
	return Table{
		Name:        "power",
		TimeModel:   series.Interval,
		Commodity:   metering.Electricity,
		Resolutions: []metering.Resolution{metering.QuarterHour},
		Columns:     []series.Column{{Name: "channel", Identity: true, Values: []string{"A", "B"}}},
		Width:       series.Daily,
		Headroom:    2 * 24 * time.Hour,
		Integrity:   series.IntegrityWrite,
	}
}

// testArchive archives a day two days after it ends.
var testArchive = ArchiveOptions{SettlementLag: 2 * 24 * time.Hour, Step: 24 * time.Hour}

// testEnv is what a test store runs on.
type testEnv struct {
	pool *pgxpool.Pool
	cat  icecatalog.Catalog
	dir  string
	log  string // LogPostgres or LogObjectStore
}

// newEnv returns a fresh database and warehouse with the catalog's log on
// PostgreSQL, the default deployment.
func newEnv(t *testing.T) *testEnv { t.Helper(); return newEnvOn(t, LogPostgres) }

// newEnvOn returns a fresh database and warehouse with the catalog's log
// on log: LogPostgres or LogObjectStore (the serverless deployment).
func newEnvOn(t *testing.T, log string) *testEnv {
	t.Helper()
	url := pgtest.NewDB(t)
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	return envOf(t, cfg, t.TempDir(), log)
}

// envOf opens a pool of cfg, and the catalog with its log on log over the
// warehouse in dir, its log's pool of cfg too.
func envOf(t *testing.T, cfg *pgxpool.Config, dir, log string) *testEnv {
	t.Helper()
	return envAt(t, cfg, "file://"+dir, dir, log)
}

// envAt is envOf with the warehouse at whURL; dir is the env's directory
// (the warehouse's, if local).
func envAt(t *testing.T, cfg *pgxpool.Config, whURL, dir, log string) *testEnv {
	t.Helper()
	ctx := t.Context()
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	wh, err := catalog.OpenWarehouse(ctx, whURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { wh.Bucket.Close() })
	cat, closeCat, err := OpenCatalog(ctx, CatalogOptions{Log: log, Warehouse: wh, Postgres: cfg, LogOptions: postgres.Options{Schema: "meterstore"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeCat)
	return &testEnv{pool: pool, cat: cat, dir: dir, log: log}
}

// open opens a Store on e with opts filled in.
func (e *testEnv) open(t *testing.T, opts Options) *Store {
	t.Helper()
	opts.Pool, opts.Catalog = e.pool, e.cat
	if opts.Tables == nil {
		opts.Tables = []Table{power()}
	}
	if opts.Archive.Step == 0 {
		opts.Archive = testArchive
	}
	if opts.Query.CacheDir == "" {
		opts.Query.CacheDir = t.TempDir()
	}
	s, err := Open(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	// Before the cache directory goes: the engine writes copies of day
	// sums there after a statement, which Close waits for.
	t.Cleanup(s.Close)
	return s
}

func newStore(t *testing.T) *Store { return newEnv(t).open(t, Options{}) }

// malo returns the i-th valid market location id.
func malo(i int) string {
	m, err := metering.MaLoFromPrefix(fmt.Sprintf("%010d", 1_000_000_000+i))
	if err != nil {
		panic(err)
	}
	return m.String()
}

// qh returns quarter hour slot of day d of meter i on channel ch under
// version v.
func qh(i, d, slot int, ch string, v uint64, value int64) Reading {
	from := dayN(d).Add(time.Duration(slot) * 15 * time.Minute)
	return Reading{
		MaLo:         malo(i),
		OBIS:         "1-1:1.29.0",
		From:         from,
		To:           from.Add(15 * time.Minute),
		Value:        series.Decimal(value),
		Unit:         metering.KilowattHour,
		Quality:      metering.TrueValue,
		Resolution:   metering.QuarterHour,
		Version:      v,
		VersionScope: "9900000000003:" + from.Format("2006-01"),
		Extra:        map[string]string{"channel": ch},
	}
}

// mustWrite writes rows into power and fails the test on an error.
func mustWrite(t *testing.T, s *Store, rows []Reading) WriteResult {
	t.Helper()
	res, err := s.Write(t.Context(), "power", rows)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// mustQuery runs sql on power and fails the test on an error.
func mustQuery(t *testing.T, s *Store, sql string) *Result {
	t.Helper()
	res, err := s.Query(t.Context(), "power", sql)
	if err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return res
}

func ts(t time.Time) string {
	return "TIMESTAMPTZ '" + t.UTC().Format("2006-01-02 15:04:05.999999") + "+00'"
}

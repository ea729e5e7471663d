package archive

import (
	"context"
	"fmt"
	"maps"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	icetable "github.com/apache/iceberg-go/table"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/meterstore/meterstore/catalog"
	"github.com/meterstore/meterstore/consensus/bloblog"
	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/internal/hot"
	"github.com/meterstore/meterstore/internal/pgtest"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

func TestMain(m *testing.M) {
	// The crash test re-executes this binary as the archiver it kills.
	if os.Getenv(envChild) != "" {
		os.Exit(runChild())
	}
	pgtest.Main(m)
}

// day0 is the first day the tests write.
var day0 = time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)

func dayN(n int) time.Time { return day0.AddDate(0, 0, n) }

// lastgang declares the daily-partitioned quarter-hour table of the tests,
// with an identity column so that extra columns travel too.
func lastgang() *series.Table {
	return &series.Table{
		Name:        "lastgang",
		TimeModel:   series.Interval,
		Commodity:   metering.Electricity,
		Resolutions: []metering.Resolution{metering.QuarterHour},
		Columns:     []series.Column{{Name: "channel", Identity: true, Values: []string{"A", "B"}}, {Name: "source"}},
		Width:       series.Daily,
		Headroom:    24 * time.Hour,
	}
}

// env is a store for one test: a database, a warehouse on the local disk
// whose consensus log is on the same disk, both tiers and a declared table.
type env struct {
	url, dir string
	pool     *pgxpool.Pool
	hot      *hot.Tier
	cold     *cold.Tier
	t        *series.Table
	ct       *cold.Table
}

// openEnv opens the tiers on an existing database and warehouse; check, if
// set, runs before every catalog commit after the watermark check.
func openEnv(ctx context.Context, url, dir string, check catalog.CommitCheck) (*env, func(), error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, nil, err
	}
	cfg.MaxConns = 12
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, nil, err
	}
	wh, err := catalog.OpenWarehouse(ctx, "file://"+dir)
	if err != nil {
		pool.Close()
		return nil, nil, err
	}
	closeAll := func() { pool.Close(); wh.Bucket.Close() }
	l, err := bloblog.New(wh.Bucket, "_log/")
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	wc := cold.WatermarkCheck()
	cat, err := catalog.New(catalog.Options{Warehouse: wh, Log: l, Check: func(id icetable.Identifier, base, next icetable.Metadata) error {
		if err := wc(id, base, next); err != nil {
			return err
		}
		if check != nil {
			return check(id, base, next)
		}
		return nil
	}})
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	h, err := hot.New(pool, hot.Options{DDLLockTimeout: 500 * time.Millisecond})
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	c, err := cold.New(cat, cold.Options{})
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	e := &env{url: url, dir: dir, pool: pool, hot: h, cold: c, t: lastgang()}
	if err := h.Ensure(ctx, e.t); err != nil {
		closeAll()
		return nil, nil, err
	}
	if e.ct, err = c.Ensure(ctx, e.t); err != nil {
		closeAll()
		return nil, nil, err
	}
	return e, closeAll, nil
}

// newEnv returns a fresh store with partitions for days 0 to days-1.
func newEnv(t *testing.T, days int) *env {
	t.Helper()
	e, closeAll, err := openEnv(t.Context(), pgtest.NewDB(t), t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(closeAll)
	if _, err := e.hot.CreatePartitions(t.Context(), e.t, dayN(0), dayN(days-1)); err != nil {
		t.Fatal(err)
	}
	return e
}

func (e *env) archiver(t *testing.T, cfg Config) *Archiver {
	t.Helper()
	a, err := New(e.hot, e.cold, e.pool, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// malo returns the i-th valid market location id.
func malo(i int) string {
	m, err := metering.MaLoFromPrefix(fmt.Sprintf("%010d", 1_000_000_000+i))
	if err != nil {
		panic(err)
	}
	return m.String()
}

// qh returns the quarter hour slot of day d of meter i under version v.
func qh(i, d, slot int, v uint64, value int64) series.Reading {
	from := dayN(d).Add(time.Duration(slot) * 15 * time.Minute)
	r := series.Reading{
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
		Extra:        map[string]string{"channel": "A"},
	}
	if slot%7 == 0 {
		r.Extra["source"] = "MSCONS"
		r.MeLo = "DE0001234567890123456789012345678"
	}
	return r
}

// An oracle is the set of acknowledged readings, by primary key.
type oracle struct {
	mu   sync.Mutex
	rows map[string]string
}

func newOracle() *oracle { return &oracle{rows: map[string]string{}} }

func (o *oracle) ack(rs []series.Reading) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, r := range rs {
		o.rows[key(&r)] = content(&r)
	}
}

func (o *oracle) snapshot() map[string]string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return maps.Clone(o.rows)
}

// key is a reading's primary key: merge key and version.
func key(r *series.Reading) string {
	return strings.Join([]string{r.MaLo, r.OBIS, r.From.UTC().Format(time.RFC3339Nano), r.Extra["channel"], strconv.FormatUint(r.Version, 10)}, "|")
}

// content is what a reading states, without what the store derives.
func content(r *series.Reading) string {
	return fmt.Sprintf("%s|%s|%v|%v|%v|%v|%s|%s|%s|%q", r.To.UTC().Format(time.RFC3339Nano), r.Value, r.Unit, r.Quality,
		r.Resolution, r.MeLo, r.VersionScope, r.Subject, r.Extra["source"], r.Extra["channel"])
}

// checkTiers compares the union of both tiers with the oracle, as a
// multiset: every acknowledged reading exactly once, with its content, and
// nothing else; and it checks invariant 1, the split at W.
func checkTiers(t *testing.T, e *env, want map[string]string) {
	t.Helper()
	ctx := t.Context()
	w, hasW, err := e.cold.Watermark(ctx, e.ct)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	add := func(tier string, r series.Reading) {
		k := key(&r)
		if _, dup := got[k]; dup {
			t.Errorf("%s: reading %s stored twice", tier, k)
		}
		got[k] = content(&r)
	}
	if err := e.hot.Scan(ctx, e.t, series.Range{}, func(r series.Reading) error {
		if hasW && r.From.Before(w) {
			t.Errorf("invariant 1: hot reading %s below W %s", key(&r), w)
		}
		add("hot", r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for r, err := range e.cold.Scan(ctx, e.ct, series.Range{}) {
		if err != nil {
			t.Fatal(err)
		}
		if !hasW || !r.From.Before(w) {
			t.Errorf("invariant 1: cold reading %s not below W %s", key(&r), w)
		}
		add("cold", r)
	}
	for k, c := range want {
		g, ok := got[k]
		switch {
		case !ok:
			t.Errorf("acknowledged reading %s lost", k)
		case g != c:
			t.Errorf("reading %s: stored %s, acknowledged %s", k, g, c)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("reading %s stored but never acknowledged", k)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
}

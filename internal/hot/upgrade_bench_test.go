package hot

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/meterstore/meterstore/internal/pgtest"
	"github.com/meterstore/meterstore/series"
)

// BenchmarkIntegrityUpgrade upgrades a hot tier of 2,016,000 stored rows
// (3,000 meters' quarter hours over 7 daily partitions; MS_UPGRADE_METERS
// changes the meters) from integrity exclusion, and from write, to
// statement, while two writers of another tier (another process) keep
// writing a meter-day of new versions each, and reports the upgrade's
// time, the writes during it, the longest of them against the longest
// before it, and the longest wait of a writer for a table's lock (the
// kind the upgrade takes) and for any lock, sampled from pg_locks every
// 5 ms. Run it once: -bench IntegrityUpgrade -benchtime 1x. The
// times are measured, not judged: nothing fails on them.
func BenchmarkIntegrityUpgrade(b *testing.B) {
	meters := 3000
	if n, err := strconv.Atoi(os.Getenv("MS_UPGRADE_METERS")); err == nil && n > 0 {
		meters = n
	}
	for _, from := range []series.Integrity{series.IntegrityExclusion, series.IntegrityWrite} {
		b.Run(from.String(), func(b *testing.B) {
			for range b.N {
				benchUpgrade(b, from, meters)
			}
		})
	}
}

func benchUpgrade(b *testing.B, from series.Integrity, meters int) {
	const days = 7
	ctx := b.Context()
	b.StopTimer()
	url := pgtest.NewDB(b)
	pool := benchPool(b, url, "meterstore-upgrade")
	h, err := New(pool, Options{})
	if err != nil {
		b.Fatal(err)
	}
	tab := lastgang("lastgang")
	tab.Integrity = from
	if err := h.Ensure(ctx, tab); err != nil {
		b.Fatal(err)
	}
	if _, err := h.CreatePartitions(ctx, tab, day, day.AddDate(0, 0, days-1)); err != nil {
		b.Fatal(err)
	}
	ids := make([]string, meters)
	for i := range ids {
		ids[i] = malo(i + 1)
	}
	start := time.Now()
	for d := range days {
		at := day.AddDate(0, 0, d)
		_, err := pool.Exec(ctx, `INSERT INTO meterstore.lastgang (malo_id, obis_code, sparte, "from", "to", value, unit, quality, resolution, version, version_scope, balancing_day)
SELECT m, '1-1:1.29.0', 'STROM', $2::timestamptz + s * interval '15 minutes', $2::timestamptz + (s + 1) * interval '15 minutes',
	(s % 50)::numeric, 'kWh', '220', 'PT15M', 100, '9900000000003:2026-03', $3::date
FROM unnest($1::text[]) m, generate_series(0, 95) s`, ids, at, at.Format("2006-01-02"))
		if err != nil {
			b.Fatal(err)
		}
	}
	if _, err := pool.Exec(ctx, `VACUUM ANALYZE meterstore.lastgang`); err != nil {
		b.Fatal(err)
	}
	rows := meters * days * 96
	b.Logf("%s: %d rows stored in %v", from, rows, time.Since(start).Round(time.Second))

	// The writers: another process's tier, on the declaration it had.
	wpool := benchPool(b, url, "meterstore-bench-writer")
	w, err := New(wpool, Options{})
	if err != nil {
		b.Fatal(err)
	}
	wtab := lastgang("lastgang")
	var (
		version atomic.Uint64
		mu      sync.Mutex
		lat     []time.Duration
		werr    error
	)
	version.Store(1000)
	writers := func(stop <-chan struct{}) *sync.WaitGroup {
		var wg sync.WaitGroup
		for g := range 2 {
			wg.Go(func() {
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					v := version.Add(1)
					rs := meterDay(1+(i*7+g*13)%meters, v)
					shift := (i + g) % days
					for n := range rs {
						rs[n].From, rs[n].To = rs[n].From.AddDate(0, 0, shift), rs[n].To.AddDate(0, 0, shift)
					}
					t0 := time.Now()
					_, err := w.Write(ctx, wtab, rs)
					d := time.Since(t0)
					mu.Lock()
					lat = append(lat, d)
					if err != nil && werr == nil {
						werr = err
					}
					mu.Unlock()
				}
			})
		}
		return &wg
	}
	// took returns the writes' latencies so far, sorted, and forgets them.
	took := func() []time.Duration {
		mu.Lock()
		defer mu.Unlock()
		out := slices.Sorted(slices.Values(lat))
		lat = nil
		return out
	}
	describe := func(ds []time.Duration) string {
		if len(ds) == 0 {
			return "no writes"
		}
		at := func(q float64) time.Duration { return ds[int(q*float64(len(ds)-1))].Round(time.Millisecond) }
		return fmt.Sprintf("%d writes of 96 rows, median %v, p99 %v, longest %v", len(ds), at(0.5), at(0.99), ds[len(ds)-1].Round(time.Millisecond))
	}

	stop := make(chan struct{})
	wg := writers(stop)
	time.Sleep(5 * time.Second)
	close(stop)
	wg.Wait()
	before := took()

	// The longest waits seen, in µs: for a table's lock, which is what
	// the upgrade takes, and for any lock, the advisory locks by which
	// writers of one partition or series wait for each other included.
	var tableWait, anyWait atomic.Int64
	sampling, sampled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			var table, any int64
			err := pool.QueryRow(ctx, `SELECT
	coalesce(max((extract(epoch FROM clock_timestamp() - l.waitstart) * 1e6)::int8) FILTER (WHERE l.locktype = 'relation'), 0),
	coalesce(max((extract(epoch FROM clock_timestamp() - l.waitstart) * 1e6)::int8), 0)
FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
WHERE NOT l.granted AND l.waitstart IS NOT NULL AND a.application_name = 'meterstore-bench-writer'`).Scan(&table, &any)
			if err == nil && table > tableWait.Load() {
				tableWait.Store(table)
			}
			if err == nil && any > anyWait.Load() {
				anyWait.Store(any)
			}
			select {
			case <-sampling:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	stop = make(chan struct{})
	wg = writers(stop)
	up := lastgang("lastgang")
	up.Integrity = series.IntegrityStatement
	b.StartTimer()
	start = time.Now()
	err = h.Ensure(ctx, up)
	upgrade := time.Since(start)
	b.StopTimer()
	close(stop)
	wg.Wait()
	close(sampling)
	<-sampled
	if err != nil {
		b.Fatal(err)
	}
	if werr != nil {
		b.Fatalf("a writer failed: %v", werr)
	}
	during := took()
	wait := time.Duration(tableWait.Load()) * time.Microsecond
	other := time.Duration(anyWait.Load()) * time.Microsecond
	b.ReportMetric(upgrade.Seconds(), "upgrade-s")
	b.ReportMetric(slices.Max(append(during, 0)).Seconds(), "max-write-s")
	b.ReportMetric(wait.Seconds(), "max-tablelockwait-s")
	b.Logf("%s to statement, %d rows: upgrade %v; the longest wait of a writer for a table's lock during it %v (for any lock, another writer's too, %v)\n  before: %s\n  during: %s",
		from, rows, upgrade.Round(time.Millisecond), wait.Round(time.Millisecond), other.Round(time.Millisecond), describe(before), describe(during))
}

// benchPool returns a pool on url whose sessions carry name as their
// application_name.
func benchPool(b *testing.B, url, name string) *pgxpool.Pool {
	b.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		b.Fatal(err)
	}
	cfg.MaxConns = 8
	cfg.ConnConfig.RuntimeParams["application_name"] = name
	pool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(pool.Close)
	return pool
}

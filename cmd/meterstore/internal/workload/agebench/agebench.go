// Package agebench measures how a table's metadata operations cost as the
// table ages: a cold table is given N daily archivals through MeterStore's
// catalog, on each log backend, and then the log's Head, one more
// archival, LoadTable and the cold tier's scan planning are timed; then
// again after each maintenance step: compaction, then snapshot expiry, and
// last with the tables of every age timed in turn. With the table logs
// truncated (the catalog's default) the log's costs should not depend on
// N; the manifests and snapshots that archivals add are what maintenance
// bounds.
package agebench

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/meterstore/meterstore/catalog"
	"github.com/meterstore/meterstore/consensus"
	"github.com/meterstore/meterstore/consensus/bloblog"
	"github.com/meterstore/meterstore/consensus/postgres"
	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// The log backends a run can age a table on.
const (
	LogPostgres = "postgres"
	LogObject   = "object"
)

// The phases a table is measured in, in order.
const (
	PhaseAged      = "aged"      // N archivals, no maintenance
	PhaseCompacted = "compacted" // then compacted: small files and manifests merged
	PhaseExpired   = "expired"   // then KeepSnapshots more archivals, snapshots expired down to the newest KeepSnapshots, and the files no snapshot references removed
	// PhaseTogether times the expired tables of every age of a backend
	// once more, sample by sample in turn, after all of them are aged: a
	// ratio of tables measured minutes apart also measures what else the
	// machine did in between, and this one does not.
	PhaseTogether = "together"
)

// Config describes a run.
type Config struct {
	// Ages are the numbers of daily archivals each table is given before
	// it is measured.
	Ages []int `json:"ages"`
	// Logs are the backends, LogPostgres and LogObject.
	Logs []string `json:"logs"`
	// Samples is how often each operation is timed per table and phase.
	Samples int `json:"samples"`
	// Keep is the catalog's TableLogKeep: 0 its default, -1 no truncation.
	Keep int `json:"keep"`
	// Meters is how many market locations a day's window holds, each 96
	// quarter hours.
	Meters int `json:"meters"`
	// KeepSnapshots is what expiry keeps in the expired phase: the newest
	// so many snapshots.
	KeepSnapshots int `json:"keep_snapshots"`
	// Dir holds the warehouses; empty means a temporary directory.
	Dir      string       `json:"-"`
	Progress io.Writer    `json:"-"`
	Logger   *slog.Logger `json:"-"`
}

// DefaultConfig ages tables by 30, 365 and 1,000 daily archivals of one
// market location on both backends, a few minutes on two cores; the
// issue's ten years are Ages 30, 365, 3650.
func DefaultConfig() Config {
	return Config{Ages: []int{30, 365, 1000}, Logs: []string{LogPostgres, LogObject}, Samples: 30,
		Meters: 1, KeepSnapshots: 100}
}

// A Point is one table of one age on one backend in one phase. Latencies
// are p50s in milliseconds over Samples runs.
type Point struct {
	Log   string `json:"log"`
	Age   int    `json:"age"`
	Phase string `json:"phase"`
	// Seconds is how long giving the table its archivals, or the phase's
	// maintenance, took.
	Seconds float64 `json:"seconds"`
	// Entries is how many commits the table's log holds, and Snapshots,
	// Manifests and Files what the table has, before the timings.
	Entries   int     `json:"log_entries"`
	Snapshots int     `json:"snapshots"`
	Manifests int     `json:"manifests"`
	Files     int     `json:"data_files"`
	Head      float64 `json:"head_p50_ms"`
	Commit    float64 `json:"commit_p50_ms"`
	Load      float64 `json:"load_table_p50_ms"`
	Plan      float64 `json:"plan_p50_ms"`
	// Compaction is what the compacted phase's compaction did.
	Compaction *cold.Compaction `json:"compaction,omitempty"`
	// Orphans counts the files the expired phase removed.
	Orphans int `json:"orphans_removed,omitempty"`
}

// A Ratio compares the oldest table with the youngest on one backend in
// one phase.
type Ratio struct {
	Log    string  `json:"log"`
	Phase  string  `json:"phase"`
	From   int     `json:"from_age"`
	To     int     `json:"to_age"`
	Head   float64 `json:"head"`
	Commit float64 `json:"commit"`
	Load   float64 `json:"load_table"`
	Plan   float64 `json:"plan"`
}

// A Result is what a run measured.
type Result struct {
	Config Config `json:"config"`
	// CommitKind says what the aging commits were.
	CommitKind string  `json:"commit_kind"`
	Points     []Point `json:"points"`
	Ratios     []Ratio `json:"ratios"`
}

// Run ages one table per backend and age and measures it. pgURL is the
// server for the PostgreSQL log.
func Run(ctx context.Context, pgURL string, c Config) (*Result, error) {
	if len(c.Ages) == 0 || slices.Min(c.Ages) < 1 || c.Samples < 1 || c.Meters < 1 || c.KeepSnapshots < 1 {
		return nil, fmt.Errorf("agebench: want ages of at least one archival, and at least one sample, meter and snapshot kept")
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Progress == nil {
		c.Progress = io.Discard
	}
	dir := c.Dir
	if dir == "" {
		tmp, err := os.MkdirTemp("", "meterstore-agebench-")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	res := &Result{Config: c, CommitKind: fmt.Sprintf("daily archival (cold.Tier.Archive of one day's window, %d quarter hours, with its watermark)", 96*c.Meters)}
	progress := func(p Point) {
		fmt.Fprintf(c.Progress, "agebench: %s, %d archivals, %s (%.1fs): %d log entries, %d snapshots, %d manifests, %d files; head %.2f ms, commit %.2f ms, load %.2f ms, plan %.2f ms\n",
			p.Log, p.Age, p.Phase, p.Seconds, p.Entries, p.Snapshots, p.Manifests, p.Files, p.Head, p.Commit, p.Load, p.Plan)
	}
	for _, lg := range c.Logs {
		var mine []Point
		var benches []*bench
		for _, age := range c.Ages {
			ps, b, err := runOne(ctx, pgURL, filepath.Join(dir, fmt.Sprintf("%s-%d", lg, age)), lg, age, c)
			if b != nil {
				defer b.close()
			}
			if err != nil {
				return nil, fmt.Errorf("agebench: %s log, %d archivals: %w", lg, age, err)
			}
			for _, p := range ps {
				progress(p)
			}
			mine = append(mine, ps...)
			benches = append(benches, b)
		}
		if len(benches) > 1 {
			ps, err := together(ctx, lg, benches)
			if err != nil {
				return nil, fmt.Errorf("agebench: %s log, measured together: %w", lg, err)
			}
			for _, p := range ps {
				progress(p)
			}
			mine = append(mine, ps...)
		}
		res.Points = append(res.Points, mine...)
		res.Ratios = append(res.Ratios, ratios(lg, mine)...)
	}
	return res, nil
}

// together measures the tables of benches, of one backend, sample by
// sample in turn.
func together(ctx context.Context, lg string, benches []*bench) ([]Point, error) {
	out := make([]Point, len(benches))
	ss := make([]samples, len(benches))
	for i, b := range benches {
		p, err := b.describe(ctx, lg, PhaseTogether)
		if err != nil {
			return nil, err
		}
		out[i] = p
	}
	for range benches[0].c.Samples {
		for i, b := range benches {
			if err := b.sample(ctx, &ss[i]); err != nil {
				return nil, err
			}
		}
	}
	for i := range out {
		ss[i].set(&out[i])
	}
	return out, nil
}

// ratios compares, per phase, the oldest table of ps with the youngest.
func ratios(lg string, ps []Point) []Ratio {
	var out []Ratio
	for _, phase := range []string{PhaseAged, PhaseCompacted, PhaseExpired, PhaseTogether} {
		var first, last *Point
		for i := range ps {
			if ps[i].Phase != phase {
				continue
			}
			if first == nil || ps[i].Age < first.Age {
				first = &ps[i]
			}
			if last == nil || ps[i].Age > last.Age {
				last = &ps[i]
			}
		}
		if first == nil || first.Age == last.Age {
			continue
		}
		out = append(out, Ratio{Log: lg, Phase: phase, From: first.Age, To: last.Age,
			Head: last.Head / first.Head, Commit: last.Commit / first.Commit,
			Load: last.Load / first.Load, Plan: last.Plan / first.Plan})
	}
	return out
}

// start is the first day archived.
var start = time.Date(2016, 1, 1, 0, 0, 0, 0, time.UTC)

// aged is the table every run ages.
var aged = &series.Table{
	Name:        "aged",
	TimeModel:   series.Interval,
	Commodity:   metering.Electricity,
	Resolutions: []metering.Resolution{metering.QuarterHour},
	Width:       series.Daily,
	Headroom:    7 * 24 * time.Hour,
}

// bench is one aging table on one backend.
type bench struct {
	c         Config
	log       consensus.Log
	tier      *cold.Tier
	t         *cold.Table
	cal       *metering.Calendar
	days      int // archived so far
	shard     string
	age       int // archivals before the first measurement
	warehouse catalog.Warehouse
	close     func() // releases the warehouse and the log
}

// runOne ages a table by age archivals on backend lg and measures it in
// each phase. The bench it returns, if not nil, stays open for together
// until the caller closes it, also when the error is not nil.
func runOne(ctx context.Context, pgURL, dir, lg string, age int, c Config) ([]Point, *bench, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, err
	}
	wh, err := catalog.OpenWarehouse(ctx, "file://"+dir)
	if err != nil {
		return nil, nil, err
	}
	b := &bench{c: c, age: age, warehouse: wh, shard: "table/" + cold.DefaultNamespace + "." + aged.Name, close: func() { wh.Bucket.Close() }}
	switch lg {
	case LogObject:
		if b.log, err = bloblog.New(wh.Bucket, "_log/"); err != nil {
			return nil, b, err
		}
	case LogPostgres:
		cfg, err := pgxpool.ParseConfig(pgURL)
		if err != nil {
			return nil, b, err
		}
		pl, err := postgres.Open(ctx, cfg, postgres.Options{Schema: fmt.Sprintf("agebench_%d_%d", age, time.Now().UnixNano())})
		if err != nil {
			return nil, b, err
		}
		b.close = func() { pl.Close(); wh.Bucket.Close() }
		b.log = pl
	default:
		return nil, b, fmt.Errorf("log %q: want %q or %q", lg, LogPostgres, LogObject)
	}
	ps, err := b.run(ctx, lg)
	return ps, b, err
}

// run ages b's table and measures it in each phase.
func (b *bench) run(ctx context.Context, lg string) ([]Point, error) {
	c, age := b.c, b.age
	cat, err := catalog.New(catalog.Options{Warehouse: b.warehouse, Log: b.log, TableLogKeep: c.Keep, Check: cold.WatermarkCheck(), Logger: c.Logger})
	if err != nil {
		return nil, err
	}
	if b.tier, err = cold.New(cat, cold.Options{Logger: c.Logger}); err != nil {
		return nil, err
	}
	if b.cal, err = metering.NewCalendar(); err != nil {
		return nil, err
	}
	if b.t, err = b.tier.Ensure(ctx, aged); err != nil {
		return nil, err
	}

	t0 := time.Now()
	for range age {
		if err := b.archive(ctx); err != nil {
			return nil, err
		}
	}
	p, err := b.measure(ctx, lg, age, PhaseAged, time.Since(t0))
	if err != nil {
		return nil, err
	}
	out := []Point{p}

	t0 = time.Now()
	cp, err := b.tier.Compact(ctx, b.t, cold.CompactOptions{})
	if err != nil {
		return nil, fmt.Errorf("compact: %w", err)
	}
	if p, err = b.measure(ctx, lg, age, PhaseCompacted, time.Since(t0)); err != nil {
		return nil, err
	}
	p.Compaction = &cp
	out = append(out, p)

	t0 = time.Now()
	// The retention window rolls past the compaction first, as it does
	// under the daily maintenance loop: expired at once, the newest
	// snapshots would still be the ones before the compaction, whose
	// manifest lists name every manifest of the table's age. Those files
	// stay referenced until the window passes, so what was measured
	// would be that passing moment, not the table kept maintained.
	for range c.KeepSnapshots {
		if err := b.archive(ctx); err != nil {
			return nil, err
		}
	}
	// Every snapshot but the newest KeepSnapshots is older than a
	// nanosecond: retention by count alone.
	if _, err := b.tier.ExpireSnapshots(ctx, b.t, time.Now(), cold.Retention{MaxAge: time.Nanosecond, KeepLast: c.KeepSnapshots}); err != nil {
		return nil, fmt.Errorf("expire snapshots: %w", err)
	}
	// What the loop's daily orphan removal does, without its safety age:
	// nothing else writes to this warehouse.
	rep, err := b.tier.Orphans(ctx, b.t, cold.OrphanOptions{Before: time.Now(), Delete: true})
	if err != nil {
		return nil, fmt.Errorf("remove orphan files: %w", err)
	}
	if p, err = b.measure(ctx, lg, age, PhaseExpired, time.Since(t0)); err != nil {
		return nil, err
	}
	p.Orphans = rep.Deleted
	return append(out, p), nil
}

// archive commits the next day's window.
func (b *bench) archive(ctx context.Context) error {
	day := start.AddDate(0, 0, b.days)
	end := day.AddDate(0, 0, 1)
	rs := make([]series.Reading, 0, 96*b.c.Meters)
	for m := range b.c.Meters {
		malo, err := metering.MaLoFromPrefix(fmt.Sprintf("5%09d", 100000+m))
		if err != nil {
			return err
		}
		for k := range 96 {
			from := day.Add(time.Duration(k) * 15 * time.Minute)
			rs = append(rs, series.Reading{
				MaLo: malo.String(), OBIS: "1-1:1.29.0", From: from, To: from.Add(15 * time.Minute),
				Value: series.Decimal(int64(b.days*96 + k)), Unit: metering.KilowattHour, Quality: metering.TrueValue,
				Resolution: metering.QuarterHour, Version: 1, VersionScope: "9900000000003:" + from.Format("2006-01"),
				RecordedAt: end, BalancingDay: b.cal.BalancingDay(from, metering.Electricity),
			})
		}
	}
	if _, err := b.tier.Archive(ctx, b.t, end, day, end, cold.Readings(rs)); err != nil {
		return fmt.Errorf("archive day %d: %w", b.days, err)
	}
	b.days++
	return nil
}

// measure times, interleaved, the log's Head, one more archival, a load
// of the table and a plan of every reading, Samples times each.
func (b *bench) measure(ctx context.Context, lg string, age int, phase string, took time.Duration) (Point, error) {
	p, err := b.describe(ctx, lg, phase)
	if err != nil {
		return Point{}, err
	}
	p.Seconds = took.Seconds()
	var ss samples
	for range b.c.Samples {
		if err := b.sample(ctx, &ss); err != nil {
			return Point{}, err
		}
	}
	ss.set(&p)
	return p, nil
}

// samples are the timings of a table's operations, in milliseconds.
type samples struct{ head, commit, load, plan []float64 }

// set stores the p50s of s in p.
func (s *samples) set(p *Point) {
	p.Head, p.Commit, p.Load, p.Plan = median(s.head), median(s.commit), median(s.load), median(s.plan)
}

// all is the range every plan covers.
var all = series.Range{From: start, To: start.AddDate(100, 0, 0)}

// describe returns the point of b's table in phase, without timings: what
// its log and the table hold.
func (b *bench) describe(ctx context.Context, lg, phase string) (Point, error) {
	p := Point{Log: lg, Age: b.age, Phase: phase}
	es, err := b.log.Scan(ctx, b.shard, 0, 1_000_000)
	if err != nil {
		return Point{}, err
	}
	p.Entries = len(es)
	ice, err := b.tier.Iceberg(ctx, b.t)
	if err != nil {
		return Point{}, err
	}
	p.Snapshots = len(ice.Metadata().Snapshots())
	if snap := ice.CurrentSnapshot(); snap != nil {
		fs, err := ice.FS(ctx)
		if err != nil {
			return Point{}, err
		}
		ms, err := snap.Manifests(fs)
		if err != nil {
			return Point{}, err
		}
		p.Manifests = len(ms)
	}
	pl, err := b.tier.Plan(ctx, b.t, all)
	if err != nil {
		return Point{}, err
	}
	p.Files = len(pl.Files)
	return p, nil
}

// sample times each operation once, in turn, and appends the timings to s.
func (b *bench) sample(ctx context.Context, s *samples) error {
	timed := func(xs *[]float64, fn func() error) error {
		t0 := time.Now()
		err := fn()
		*xs = append(*xs, float64(time.Since(t0).Microseconds())/1000)
		return err
	}
	err := timed(&s.head, func() error {
		_, ok, err := b.log.Head(ctx, b.shard)
		if err == nil && !ok {
			err = fmt.Errorf("the table's log is empty")
		}
		return err
	})
	if err != nil {
		return err
	}
	if err := timed(&s.commit, func() error { return b.archive(ctx) }); err != nil {
		return err
	}
	if err := timed(&s.load, func() error { _, err := b.tier.Iceberg(ctx, b.t); return err }); err != nil {
		return err
	}
	// Each archival is a new snapshot, so no plan comes from the tier's
	// cache.
	return timed(&s.plan, func() error {
		pl, err := b.tier.Plan(ctx, b.t, all)
		if err == nil && len(pl.Files) == 0 {
			err = fmt.Errorf("planned no files")
		}
		return err
	})
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

package demo

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/meterstore/meterstore/internal/archive"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
	"github.com/meterstore/meterstore/store"
)

// runner drives the simulated clock: each day's deliveries arrive the
// morning after, then every table gets an archival cycle at that time.
type runner struct {
	cfg   Config
	s     *store.Store
	cal   *metering.Calendar
	fleet fleet

	readings, present, late int
	windows                 map[string]int
	deferred                int
	started                 time.Time
	first, last             metering.Date // the days delivered
	end                     time.Time     // the simulated clock's last reading
}

func (r *runner) run(ctx context.Context) error {
	r.windows = map[string]int{}
	r.started = time.Now()
	from := r.cal.DayStart(r.first).Add(-24 * time.Hour)
	to := r.cal.DayEnd(r.last.AddDays(1))
	if err := r.s.CreatePartitions(ctx, from, to); err != nil {
		return fmt.Errorf("demo: %w", err)
	}
	total := r.cfg.Days
	for i := range total {
		d := r.first.AddDays(i)
		now := r.cal.DayEnd(d).Add(arrival) // deliveries arrive the morning after
		r.end = now
		if err := r.s.EnsurePartitions(ctx, now); err != nil {
			return err
		}
		batches, err := r.fleet.powerDay(d)
		if err != nil {
			return err
		}
		for _, b := range batches {
			if err := r.write(ctx, "power", b); err != nil {
				return err
			}
		}
		gas, err := r.fleet.gasDay(d, stamp(now, r.cal.Location()), 1)
		if err != nil {
			return err
		}
		if err := r.write(ctx, "gas", gas); err != nil {
			return err
		}
		// Every tenth day a gas supplier corrects a settled gas day: the
		// values go below the watermark, to the cold tier.
		if i >= 30 && i%10 == 0 {
			corr, err := r.fleet.gasDay(d.AddDays(-25), stamp(now.Add(time.Hour), r.cal.Location()), 1.02)
			if err != nil {
				return err
			}
			if err := r.write(ctx, "gas", corr[:max(1, len(corr)/10)]); err != nil {
				return err
			}
		}
		if err := r.archive(ctx, now); err != nil {
			return err
		}
		r.progress(i+1, total, d)
	}
	fmt.Fprintln(r.cfg.Progress)
	return nil
}

func (r *runner) write(ctx context.Context, name string, rows []series.Reading) error {
	res, err := r.s.Write(ctx, name, rows)
	if err != nil {
		return fmt.Errorf("demo: write %s: %w", name, err)
	}
	r.readings += res.Inserted + res.Superseded + res.Shadowed
	r.present += res.Present
	r.late += res.Late
	return nil
}

func (r *runner) archive(ctx context.Context, now time.Time) error {
	for _, name := range r.s.Tables() {
		out, err := r.s.Archive(ctx, name, now)
		if err != nil {
			return fmt.Errorf("demo: archive %s: %w", name, err)
		}
		if !out.Healthy() {
			return fmt.Errorf("demo: archive %s: unhealthy: %v", name, out.Violations)
		}
		r.windows[name] += len(out.Windows)
		if out.Status == archive.Deferred {
			r.deferred++
		}
		// As the maintenance loop does: a month no window reaches again
		// becomes a few large files.
		if _, err := r.s.Compact(ctx, name, settledCompaction()); err != nil {
			return fmt.Errorf("demo: %w", err)
		}
	}
	return nil
}

// settledCompaction returns the maintenance loop's default compaction.
func settledCompaction() store.CompactOptions {
	return store.CompactOptions{ManifestsOver: store.DefaultCompactManifestsOver,
		SmallFilesOver: store.DefaultCompactSmallFilesOver, Settled: true}
}

func (r *runner) progress(i, n int, d metering.Date) {
	el := time.Since(r.started)
	eta := time.Duration(float64(el) / float64(i) * float64(n-i))
	fmt.Fprintf(r.cfg.Progress, "\r  day %3d/%d  %s  %9d readings in  %3d windows archived  elapsed %s  left ~%s   ",
		i, n, d, r.readings, r.windows["power"]+r.windows["gas"], el.Round(time.Second), eta.Round(time.Second))
}

// Report is what a demo run did, per table.
type Report struct {
	Readings, Present, Late int // rows written new, redelivered unchanged, routed below W
	Tables                  []TableReport
}

// TableReport describes one table at the end of a run.
type TableReport struct {
	Name                string
	Watermark           time.Time
	Windows             int
	HotRows, ColdRows   int64
	HotBytesPerReading  float64
	ColdBytesPerReading float64
	// Cold is where the cold bytes go, from the Parquet footers.
	Cold store.Footprint
}

// printFootprint prints where table name's cold bytes go: each column's
// compressed bytes a reading and the value column's entropy.
func printFootprint(out io.Writer, name string, fp store.Footprint) {
	fmt.Fprintf(out, "\n%s cold, %d files, %.2f B/reading; by column (Parquet footers):", name, fp.Files, fp.BytesPerReading())
	for _, c := range fp.Columns {
		fmt.Fprintf(out, " %s %.3f", c.Name, fp.ColumnBytesPerReading(c))
	}
	fmt.Fprintf(out, "; not column data %.3f (bloom filters %.3f)\n", perReading(fp.OverheadBytes(), fp.Readings), perReading(fp.BloomBytes, fp.Readings))
	fmt.Fprintf(out, "%s value entropy %.3f B/reading (%d distinct values): cold / entropy %.2fx\n",
		name, fp.ValueEntropyBytes(), fp.ValueDistinct, fp.VsEntropy())
}

func perReading(b, n int64) float64 {
	if n == 0 {
		return 0
	}
	return float64(b) / float64(n)
}

func (r *runner) report(ctx context.Context) (*Report, error) {
	rep := &Report{Readings: r.readings, Present: r.present, Late: r.late}
	out := r.cfg.Out
	fmt.Fprintf(out, "\ningested %d readings (%d redelivered unchanged, %d late corrections to the cold tier) in %s\n",
		r.readings, r.present, r.late, time.Since(r.started).Round(time.Second))
	fmt.Fprintf(out, "\n%-6s %-22s %8s %12s %12s %10s %10s\n", "table", "watermark W", "windows", "hot rows", "cold rows", "hot B/row", "cold B/row")
	for _, name := range r.s.Tables() {
		st, err := r.s.Storage(ctx, name)
		if err != nil {
			return nil, err
		}
		w, _, err := r.s.Watermark(ctx, name)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(out, "%-6s %-22s %8d %12d %12d %10.1f %10.2f\n", name, w.UTC().Format(time.RFC3339),
			r.windows[name], st.HotRows, st.ColdRows, st.HotBytesPerReading(), st.ColdBytesPerReading())
		rep.Tables = append(rep.Tables, TableReport{Name: name, Watermark: w, Windows: r.windows[name],
			HotRows: st.HotRows, ColdRows: st.ColdRows, HotBytesPerReading: st.HotBytesPerReading(),
			ColdBytesPerReading: st.ColdBytesPerReading()})
	}
	for i := range rep.Tables {
		t := &rep.Tables[i]
		fp, err := r.s.ColdFootprint(ctx, t.Name)
		if err != nil {
			return nil, err
		}
		t.Cold = fp
		printFootprint(out, t.Name, fp)
	}
	if r.deferred > 0 {
		fmt.Fprintf(out, "%d cycles deferred (a lock was not had in time)\n", r.deferred)
	}
	return rep, nil
}

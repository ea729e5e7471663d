package demo

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/meterstore/meterstore/internal/archive"
	"github.com/meterstore/meterstore/internal/hot"
	"github.com/meterstore/meterstore/metering"
)

// runner drives the simulated clock: each day's deliveries arrive the
// morning after, then every table gets an archival cycle at that time.
type runner struct {
	cfg   Config
	s     *store
	cal   *metering.Calendar
	fleet fleet

	readings, present, late int
	windows                 map[string]int
	deferred                int
	started                 time.Time
}

func (r *runner) run(ctx context.Context) error {
	r.windows = map[string]int{}
	r.started = time.Now()
	first := r.cal.DayStart(r.cfg.Start).Add(-24 * time.Hour)
	last := r.cal.DayEnd(r.cfg.Start.AddDays(r.cfg.Days))
	for _, t := range r.s.tables {
		if _, err := r.s.hot.CreatePartitions(ctx, t, first, last); err != nil {
			return fmt.Errorf("demo: partitions of %s: %w", t.Name, err)
		}
	}
	total := r.cfg.Days
	for i := range total {
		d := r.cfg.Start.AddDays(i)
		now := r.cal.DayEnd(d).Add(6 * time.Hour) // deliveries arrive the morning after
		for _, t := range r.s.tables {
			if _, err := r.s.hot.EnsurePartitions(ctx, t, now); err != nil {
				return err
			}
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

func (r *runner) table(name string) *hot.Table {
	for _, t := range r.s.tables {
		if t.Name == name {
			return t
		}
	}
	return nil
}

func (r *runner) write(ctx context.Context, name string, rows []hot.Reading) error {
	t := r.table(name)
	res, err := r.s.writer.Write(ctx, t, r.s.coldTbl[name], rows)
	if err != nil {
		return fmt.Errorf("demo: write %s: %w", name, err)
	}
	r.readings += res.Inserted
	r.present += res.Present
	r.late += res.Late
	return nil
}

func (r *runner) archive(ctx context.Context, now time.Time) error {
	for _, t := range r.s.tables {
		out, err := r.s.arch.Cycle(ctx, t, r.s.coldTbl[t.Name], now)
		if err != nil {
			return fmt.Errorf("demo: archive %s: %w", t.Name, err)
		}
		if !out.Healthy() {
			return fmt.Errorf("demo: archive %s: unhealthy: %v", t.Name, out.Violations)
		}
		r.windows[t.Name] += len(out.Windows)
		if out.Status == archive.Deferred {
			r.deferred++
		}
	}
	return nil
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
}

func (r *runner) report(ctx context.Context) (*Report, error) {
	rep := &Report{Readings: r.readings, Present: r.present, Late: r.late}
	out := r.cfg.Out
	fmt.Fprintf(out, "\ningested %d readings (%d redelivered unchanged, %d late corrections to the cold tier) in %s\n",
		r.readings, r.present, r.late, time.Since(r.started).Round(time.Second))
	fmt.Fprintf(out, "\n%-6s %-22s %8s %12s %12s %10s %10s\n", "table", "watermark W", "windows", "hot rows", "cold rows", "hot B/row", "cold B/row")
	for _, t := range r.s.tables {
		ct := r.s.coldTbl[t.Name]
		w, _, err := r.s.cold.Watermark(ctx, ct)
		if err != nil {
			return nil, err
		}
		hotRows, hotBytes, err := r.hotStorage(ctx, t)
		if err != nil {
			return nil, err
		}
		st, err := r.s.cold.Storage(ctx, ct)
		if err != nil {
			return nil, err
		}
		hb := 0.0
		if hotRows > 0 {
			hb = float64(hotBytes) / float64(hotRows)
		}
		fmt.Fprintf(out, "%-6s %-22s %8d %12d %12d %10.1f %10.2f\n", t.Name, w.UTC().Format(time.RFC3339),
			r.windows[t.Name], hotRows, st.Readings, hb, st.BytesPerReading())
		rep.Tables = append(rep.Tables, TableReport{Name: t.Name, Watermark: w, Windows: r.windows[t.Name],
			HotRows: hotRows, ColdRows: st.Readings, HotBytesPerReading: hb, ColdBytesPerReading: st.BytesPerReading()})
	}
	if r.deferred > 0 {
		fmt.Fprintf(out, "%d cycles deferred (a lock was not had in time)\n", r.deferred)
	}
	return rep, nil
}

// hotStorage counts a table's rows in its attached partitions and their
// size with indexes and TOAST.
func (r *runner) hotStorage(ctx context.Context, t *hot.Table) (rows, bytes int64, err error) {
	parent := pgx.Identifier{r.s.hot.Schema(), t.Name}.Sanitize()
	err = r.s.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM `+parent+`),
	coalesce((SELECT sum(pg_total_relation_size(relid)) FROM pg_partition_tree($1::regclass)), 0)`,
		parent).Scan(&rows, &bytes)
	return rows, bytes, err
}

package query

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/meterstore/meterstore/series"
)

// retries is how often a query whose range is in flight between the
// tiers is read again, after backoff << attempt.
const (
	retries = 3
	backoff = 50 * time.Millisecond
)

// A split says where the union of the tiers divides: cold rows below W,
// hot rows at or above it; without W no cold row and every hot row.
type split struct {
	w    time.Time
	hasW bool
}

// read fetches the rows of range r of e's table from the tiers into inst
// and creates the views over them in p. It returns the Parquet files the
// views read.
func (e *reader) read(ctx context.Context, inst *instance, p place, r series.Range, o ReadOptions, versions bool, res *TableRead) ([]string, error) {
	v := view{knownAt: o.KnownAt, ceiling: o.KnownAt, broken: e.broken, noVersions: !versions}
	res.Name, res.Range, res.Ceiling = e.table.Name, r, o.KnownAt
	// views creates the views in p, with v as it is then.
	views := func(hot *hotScan, files fileSet, s split) error {
		cold, defs, err := createViews(ctx, inst, e.layout, p, hot, files, s, v)
		if inst.reads == nil {
			inst.reads = map[string]tierRead{}
		}
		inst.reads[p.out] = tierRead{hot: hot, s: s, v: v, cold: cold, views: defs}
		return err
	}
	if r.Empty() {
		return nil, views(nil, fileSet{}, split{})
	}
	if o.asOf() {
		pl, err := e.src.ColdAt(ctx, r, o.ref())
		switch {
		case errors.Is(err, ErrNoSnapshot):
			return nil, fmt.Errorf("query: as of: %w", err)
		case err != nil:
			return nil, fmt.Errorf("%w: as of: %w", ErrColdUnreachable, err)
		}
		if err := checkLocal(pl.Files); err != nil {
			return nil, err
		}
		v.asOf = &past{files: filesOf(pl), s: split{w: pl.Watermark, hasW: pl.HasWatermark}}
		v.ceiling = earliest(pl.Committed, o.KnownAt)
		res.Ceiling = v.ceiling
		// Below the snapshot's W its files answer; from W on, the current
		// tiers do, within the ceiling.
		r.From = later(r.From, pl.Watermark, pl.HasWatermark)
		defer func() {
			res.Snapshot, res.AsOf, res.SnapshotAt = pl.SnapshotID, true, pl.Committed
			res.Watermark, res.HasWatermark = pl.Watermark, pl.HasWatermark
			if pl.HasWatermark && !slices.Contains(res.Tiers, "cold") {
				res.Tiers = append([]string{"cold"}, res.Tiers...)
			}
		}()
		if r.Empty() {
			res.Tiers = nil
			return pl.Files, views(nil, fileSet{}, split{})
		}
	}
	switch o.Mode {
	case ReadHistorical:
		files, s, err := e.historical(ctx, r, res)
		if err != nil {
			return nil, err
		}
		return files.all(), views(nil, files, s)
	case ReadOperational:
		hot, err := e.operational(ctx, inst, r, res)
		if err != nil {
			return nil, err
		}
		return nil, views(hot, fileSet{}, split{})
	}
	var err error
	for attempt := range retries + 1 {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return nil, errors.Join(err, ctx.Err())
			case <-time.After(backoff << attempt):
			}
		}
		var (
			files fileSet
			s     split
			hot   *hotScan
		)
		files, s, hot, err = e.attempt(ctx, inst, p, r, res, true)
		if err == nil && v.asOf != nil && v.asOf.s.hasW && s.hasW && s.w.Before(v.asOf.s.w) {
			return nil, fmt.Errorf("query: the cold tier's watermark %s is below the watermark %s of the snapshot read as of",
				stamp(s.w), stamp(v.asOf.s.w))
		}
		if err == nil {
			all := files.all()
			if v.asOf != nil {
				all = append(all, v.asOf.files.all()...)
			}
			return all, views(hot, files, s)
		}
		if !errors.Is(err, ErrInFlight) {
			return nil, err
		}
	}
	return nil, err
}

// attempt reads the tiers once: W0, then opens the hot read (its
// snapshot), then plans the cold tier, then reads the hot floor that
// vouches for the hot read. The hot rows themselves cross while the
// statement runs, from the snapshot opened before the cold plan.
//
// With fold, W0 of the query's first table is read unvetted where the
// source can vet it in the statement that takes the hot snapshot
// (FoldingSource): where that does not vouch for W0, the attempt starts
// over without fold, W0 vetted before. A read needing no hot row is
// vetted by its cold plan, whose W, at or above W0, Source.Cold vets.
func (e *reader) attempt(ctx context.Context, inst *instance, p place, r series.Range, res *TableRead, fold bool) (fileSet, split, *hotScan, error) {
	res.Snapshot = 0
	if files, s, hot, handled, err := e.belowSeen(ctx, inst, r, res); handled {
		return files, s, hot, err
	}
	lo, hi := r.From, r.To
	begin := time.Now()
	fs, canFold := e.src.(FoldingSource)
	var (
		w0       time.Time
		ok0      bool
		unvetted bool
		err      error
	)
	if fold && canFold && inst.snap == nil {
		w0, ok0, unvetted, err = fs.FoldWatermark(ctx)
	} else {
		w0, ok0, err = e.src.Watermark(ctx)
	}
	res.Timing.step(StepWatermark, begin)
	if err != nil {
		return e.hotOnly(ctx, inst, r, res, err)
	}
	// W only grows: a range below W0 needs no hot row, one at or above it
	// no cold file.
	needHot := !ok0 || hi.IsZero() || hi.After(w0)
	needCold := ok0 && (lo.IsZero() || lo.Before(w0))
	inst.wide = inst.wide || needCold
	var hot *hotScan
	if needHot {
		begin := time.Now()
		q := series.Range{From: later(lo, w0, ok0), To: hi, MaLo: r.MaLo}
		if unvetted {
			var vouched bool
			if hot, vouched, err = e.openVouched(ctx, inst, fs, q, w0, ok0); err != nil {
				return fileSet{}, split{}, nil, err
			}
			if !vouched {
				return e.attempt(ctx, inst, p, r, res, false)
			}
		} else if hot, err = e.openHot(ctx, inst, q); err != nil {
			return fileSet{}, split{}, nil, err
		}
		res.Timing.Hot += time.Since(begin)
		res.Timing.step(StepHotSnapshot, begin)
	}
	fail := func(err error) (fileSet, split, *hotScan, error) {
		if hot != nil {
			inst.dropHot(hot)
		}
		return fileSet{}, split{}, nil, err
	}
	s := split{w: w0, hasW: ok0}
	var files fileSet
	if needCold {
		begin := time.Now()
		pl, err := e.src.Cold(ctx, series.Range{From: lo, To: hi, MaLo: r.MaLo})
		res.Timing.Plan += time.Since(begin)
		res.Timing.step(StepColdPlan, begin)
		if err != nil {
			if hot != nil {
				inst.dropHot(hot)
			}
			return e.hotOnly(ctx, inst, r, res, err)
		}
		if !pl.HasWatermark || pl.Watermark.Before(w0) {
			return fail(fmt.Errorf("query: the cold tier's watermark went back from %s to %s (%v)",
				stamp(w0), stamp(pl.Watermark), pl.HasWatermark))
		}
		if err := checkLocal(pl.Files); err != nil {
			return fail(err)
		}
		s, files = split{w: pl.Watermark, hasW: true}, filesOf(pl)
		res.Snapshot = pl.SnapshotID
	}
	if needHot {
		begin := time.Now()
		if err := e.checkFloor(ctx, hot, later(lo, s.w, s.hasW), hi); err != nil {
			return fail(err)
		}
		res.Timing.step(StepFloor, begin)
	}
	res.Tiers = nil
	if needCold {
		res.Tiers = append(res.Tiers, "cold")
	}
	if needHot {
		res.Tiers = append(res.Tiers, "hot")
	}
	res.Watermark, res.HasWatermark = s.w, s.hasW
	if s.hasW {
		e.saw(s.w)
	}
	return files, s, hot, nil
}

// historical plans the cold files of r with no PostgreSQL connection at
// all (Source.ColdAlone): the rows below the planned snapshot's W, split
// there; the rows at or above it are not seen, and res says so.
func (e *reader) historical(ctx context.Context, r series.Range, res *TableRead) (fileSet, split, error) {
	begin := time.Now()
	pl, err := e.src.ColdAlone(ctx, series.Range{From: r.From, To: r.To, MaLo: r.MaLo})
	res.Timing.Plan += time.Since(begin)
	res.Timing.step(StepColdPlan, begin)
	if err != nil {
		return fileSet{}, split{}, fmt.Errorf("%w: %w", ErrColdUnreachable, err)
	}
	if err := checkLocal(pl.Files); err != nil {
		return fileSet{}, split{}, err
	}
	res.Mode, res.HasUnseen = ReadHistorical, true
	res.Tiers = nil
	if pl.HasWatermark {
		res.Tiers, res.Unseen = []string{"cold"}, series.Range{From: pl.Watermark}
	}
	res.Watermark, res.HasWatermark, res.Snapshot = pl.Watermark, pl.HasWatermark, pl.SnapshotID
	return filesOf(pl), split{w: pl.Watermark, hasW: pl.HasWatermark}, nil
}

// operational reads the hot rows of r with no Iceberg round trip: every
// row of the attached partitions, unsplit; the rows below the lowest
// attached partition (archived, or in flight) are not seen, and res says
// so.
func (e *reader) operational(ctx context.Context, inst *instance, r series.Range, res *TableRead) (*hotScan, error) {
	begin := time.Now()
	hot, err := e.openHot(ctx, inst, series.Range{From: r.From, To: r.To, MaLo: r.MaLo})
	if err != nil {
		return nil, err
	}
	res.Timing.Hot += time.Since(begin)
	begin = res.Timing.step(StepHotSnapshot, begin)
	f, err := e.src.HotFloor(ctx)
	res.Timing.step(StepFloor, begin)
	if err != nil {
		inst.dropHot(hot)
		return nil, fmt.Errorf("query: hot tier: %w", err)
	}
	res.Mode, res.Tiers = ReadOperational, []string{"hot"}
	res.Watermark, res.HasWatermark = time.Time{}, false
	if f.HasAttached {
		res.Unseen, res.HasUnseen = series.Range{To: f.Attached}, true
	}
	return hot, nil
}

// openHot opens a read of the hot rows of q and makes its relations
// table functions of inst, which closes it with the query. The first
// takes the query's snapshot of the hot tier, in which every table is
// read (with its read, in one step, where the source can: a
// SnapshotReader): a query holds one connection however many tables it
// reads.
func (e *reader) openHot(ctx context.Context, inst *instance, q series.Range) (*hotScan, error) {
	threads := e.threads()
	var hr HotRead
	sr, one := e.src.(SnapshotReader)
	switch {
	case inst.snap == nil && one:
		snap, r, err := sr.HotSnapshotRead(ctx, threads, q)
		if err != nil {
			return nil, fmt.Errorf("query: hot tier: %w", err)
		}
		inst.snap, hr = snap, r
	case inst.snap == nil:
		snap, err := e.src.HotSnapshot(ctx, threads)
		if err != nil {
			return nil, fmt.Errorf("query: hot tier: %w", err)
		}
		inst.snap = snap
	}
	if hr == nil {
		var err error
		if hr, err = e.src.HotRead(ctx, inst.snap, q); err != nil {
			return nil, fmt.Errorf("query: hot tier: %w", err)
		}
	}
	return e.register(ctx, inst, hr)
}

// register makes the relations of hr table functions of inst, which
// closes it with the query; a function is registered when a view calls
// it.
func (e *reader) register(ctx context.Context, inst *instance, hr HotRead) (*hotScan, error) {
	hot, err := newHotScan(hr, e.table.Name, inst.nextFunc(), e.threads(), inst.columns)
	if err != nil {
		hr.Close()
		return nil, err
	}
	inst.hot = append(inst.hot, hot)
	return hot, nil
}

// threads is how many connections a hot read may use at once.
func (e *reader) threads() int {
	if e.set.Threads > 0 {
		return e.set.Threads
	}
	return runtime.NumCPU()
}

// openVouched opens the query's hot snapshot and the read of q in it as
// openHot does, in a statement that vets w (ok false: none) too; where
// that does not vouch for it, it opens nothing and vouched is false.
func (e *reader) openVouched(ctx context.Context, inst *instance, fs FoldingSource, q series.Range, w time.Time, ok bool) (_ *hotScan, vouched bool, _ error) {
	snap, hr, vouched, err := fs.HotSnapshotReadVouched(ctx, e.threads(), q, w, ok)
	if err != nil {
		return nil, false, fmt.Errorf("query: hot tier: %w", err)
	}
	if !vouched {
		return nil, false, nil
	}
	inst.snap = snap
	hot, err := e.register(ctx, inst, hr)
	return hot, true, err
}

// checkLocal makes sure that files are local paths, which DuckDB reads and
// the lockdown allows.
func checkLocal(files []string) error {
	for _, f := range files {
		if !filepath.IsAbs(f) {
			return fmt.Errorf("query: cold file %s is not a local path", f)
		}
	}
	return nil
}

// checkFloor makes sure that the hot scan saw every row of [from, hi) at or
// above W: no partition of it was detached (by an archival whose commit the
// cold plan did not see) before the scan. A partition detached then is
// still detached now, since it is dropped only after its commit and a
// grace, so a floor read now at or below from vouches for the scan; so
// does the floor as of the scan's snapshot, if the read knows it
// (FlooredRead), which saves the round trip.
func (e *reader) checkFloor(ctx context.Context, hot *hotScan, from, hi time.Time) error {
	if !hi.IsZero() && !from.Before(hi) {
		return nil
	}
	f, ok := Floor{}, false
	if hot != nil {
		if fr, is := hot.read.(FlooredRead); is {
			f, ok = fr.SnapshotFloor()
		}
	}
	if !ok {
		var err error
		if f, err = e.src.HotFloor(ctx); err != nil {
			return fmt.Errorf("query: hot tier: %w", err)
		}
	}
	if f.Detached.After(from) {
		return fmt.Errorf("%w: partitions up to %s are detached and not yet archived, the query needs rows from %s", ErrInFlight, stamp(f.Detached), stamp(from))
	}
	return nil
}

// hotOnly answers from the hot tier alone when the cold tier failed with
// cause: if the range lies at or above the hot floor, read both before and
// after the hot read opens; otherwise the query fails.
func (e *reader) hotOnly(ctx context.Context, inst *instance, r series.Range, res *TableRead, cause error) (fileSet, split, *hotScan, error) {
	unreachable := fmt.Errorf("%w: %w", ErrColdUnreachable, cause)
	covered := func() error {
		f, err := e.src.HotFloor(ctx)
		if err != nil {
			return errors.Join(unreachable, fmt.Errorf("query: hot tier: %w", err))
		}
		if !f.HasAttached || r.From.Before(f.Attached) {
			return fmt.Errorf("%w; the hot tier alone holds every row only from %s, the query reads from %s",
				unreachable, floorText(f.Attached, f.HasAttached), stamp(r.From))
		}
		return nil
	}
	if err := covered(); err != nil {
		return fileSet{}, split{}, nil, err
	}
	hot, err := e.openHot(ctx, inst, series.Range{From: r.From, To: r.To, MaLo: r.MaLo})
	if err != nil {
		return fileSet{}, split{}, nil, err
	}
	if err := covered(); err != nil {
		inst.dropHot(hot)
		return fileSet{}, split{}, nil, err
	}
	res.Tiers = []string{"hot"}
	res.Watermark, res.HasWatermark = time.Time{}, false
	return fileSet{}, split{}, hot, nil
}

// later returns the later of lo and w, when there is a w.
func later(lo, w time.Time, ok bool) time.Time {
	if ok && w.After(lo) {
		return w
	}
	return lo
}

func floorText(f time.Time, ok bool) string {
	if !ok {
		return "nowhere (no floor)"
	}
	return stamp(f)
}

// stamp formats t for an error message; the zero time is unbounded.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "the beginning"
	}
	return t.UTC().Format(time.RFC3339Nano)
}

package archive

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/internal/hot"
	"github.com/meterstore/meterstore/series"
)

// writeAttempts bounds how often Router.Write re-routes rows whose partition
// an archival is detaching, or that it created; the waits between attempts
// for an archival double from writeBackoff, about 2.5 s in all.
const (
	writeAttempts = 9
	writeBackoff  = 10 * time.Millisecond
)

// DefaultAcceptAhead is Router.AcceptAhead when it is zero: a week, the
// headroom tables keep by default.
const DefaultAcceptAhead = 7 * 24 * time.Hour

// A Router stores readings in the tier their From belongs to: below the
// watermark in the cold tier, as a late correction that leaves W where it
// is, and at or above it in the hot tier. Nothing is ever written to
// PostgreSQL below W, where no query would look.
//
// It routes by the last watermark it read of each table, which only moves
// forward, so that hot writes read no Iceberg metadata and go on while the
// cold tier is unreachable. That is safe because the hot tier itself
// refuses every row below the true W: archival detaches every partition
// below a watermark before it commits it, and fences the window first, so
// that no partition is created there later (hot.Tier.Fence). A row sent to
// the hot tier by a stale W finds no attached partition, and Write then
// reads W anew and routes it again.
type Router struct {
	hot  *hot.Tier
	cold *cold.Tier
	// clock gives the transaction time of late corrections, which the hot
	// tier would take from the database, and the now of AcceptAhead.
	clock func() time.Time
	// Vet, if set, reads every watermark Write routes by with read and
	// vets it; Archiver.VetWatermark is the one to install.
	Vet func(ctx context.Context, table string, read func(context.Context) (time.Time, bool, error)) (time.Time, bool, error)
	// Recorded, if set, returns the watermark the archival ledger recorded
	// as committed for a table; Write routes by it while the cold tier
	// cannot be read and no watermark of the table was read yet.
	// Archiver.RecordedWatermark is the one to install.
	Recorded func(ctx context.Context, table string) (time.Time, bool, error)
	// AcceptAhead bounds how far past now Write creates a missing
	// partition: a row whose partition would start after now+AcceptAhead
	// is refused. Zero means DefaultAcceptAhead.
	AcceptAhead time.Duration

	mu    sync.Mutex
	marks map[string]mark // by table name
}

// A mark is the watermark a Router routes a table by.
type mark struct {
	w  time.Time
	ok bool // false: nothing archived, as far as known
	// reg is the *InvariantError of a catalog whose log lost entries: w
	// is then the ledger's, and no row may go to the cold tier.
	reg error
}

// NewRouter returns a Router on the two tiers.
func NewRouter(h *hot.Tier, c *cold.Tier) *Router {
	return &Router{hot: h, cold: c, clock: time.Now, marks: make(map[string]mark)}
}

// Observe tells the Router that w is committed as table's watermark, as an
// archival that just moved it knows; a lower one than it knows changes
// nothing.
func (rt *Router) Observe(table string, w time.Time) {
	rt.remember(table, mark{w: w, ok: true}, false)
}

// Forget drops what the Router knows of table's watermark, after the table
// was purged and starts anew.
func (rt *Router) Forget(table string) {
	rt.mu.Lock()
	delete(rt.marks, table)
	rt.mu.Unlock()
}

// remember raises table's mark to m. A fresh read also replaces the
// regression verdict.
func (rt *Router) remember(table string, m mark, fresh bool) mark {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	old, known := rt.marks[table]
	if known && old.ok && (!m.ok || m.w.Before(old.w)) {
		m.w, m.ok = old.w, true
	}
	if known && !fresh {
		m.reg = old.reg
	}
	rt.marks[table] = m
	return m
}

func (rt *Router) acceptAhead() time.Duration {
	if rt.AcceptAhead > 0 {
		return rt.AcceptAhead
	}
	return DefaultAcceptAhead
}

// A WriteResult reports what Write did with each row.
type WriteResult struct {
	series.Result     // per row, in order, and counted
	Late          int // rows routed to the cold tier
}

// Write stores rows of table t, whose cold table is ct.
//
// The rows below W go first, as one cold append, after the restated-value
// check against the cold readings of the same key; then the rest go to the
// hot tier as one batch. Each part is atomic, the batch as a whole is not:
// if the hot part fails, the cold part stays. Redelivering an identical row
// is a no-op in both tiers, so retrying the whole batch is safe and is how a
// caller completes it. While the cold tier is unreachable, the rows at or
// above the last watermark read are stored as usual, and a batch with rows
// below it fails with a retryable error wrapping ErrColdUnreachable before
// anything is written; so does one while the cold table is quarantined,
// wrapping the *series.QuarantineError.
//
// A hot row without a partition gets one, created on the spot, unless it
// would start more than AcceptAhead after now (an InvalidInput error
// naming the row) or below the partition floor, where an archival is
// moving or has moved the window. A hot row can also find its partition
// detached by an archival that has not committed yet. In both cases Write
// waits, re-reads W and routes the row again, a bounded number of times;
// if the archival is still not done it returns a retryable error.
func (rt *Router) Write(ctx context.Context, t *series.Table, ct *cold.Table, rows []series.Reading) (WriteResult, error) {
	return rt.WriteWith(ctx, t, ct, rows, hot.WriteOptions{})
}

// WriteWith is Write with the hot tier's options. Substitute values are
// appended in the hot tier only: a batch of them with a row below W is
// refused, naming the rows, before anything is written.
func (rt *Router) WriteWith(ctx context.Context, t *series.Table, ct *cold.Table, rows []series.Reading, o hot.WriteOptions) (WriteResult, error) {
	res := WriteResult{Result: series.Result{Status: make([]series.Status, len(rows))}}
	pending := make([]int, len(rows))
	for i := range pending {
		pending[i] = i
	}
	wait := writeBackoff
	reread := false
	for attempt := 1; ; attempt++ {
		m, read, coldErr, err := rt.watermark(ctx, t, ct, reread)
		if err != nil {
			return res, err
		}
		late, fresh := split(rows, pending, m)
		if len(late) > 0 && o.Substitute {
			var bad series.Problems
			for _, i := range late {
				bad.Add(i, "from %s is below the watermark %s: substitute values are appended in the hot tier only",
					cold.FormatTime(rows[i].From), cold.FormatTime(m.w))
			}
			return res, bad.Err(series.InvalidInput, "write", t.Name)
		}
		if len(late) > 0 && !read {
			// Late rows need the cold tier anyway, and its W vetted: a
			// log that lost entries must not take a late correction.
			if m, _, coldErr, err = rt.watermark(ctx, t, ct, true); err != nil {
				return res, err
			}
			late, fresh = split(rows, pending, m)
		}
		if len(late) > 0 {
			switch {
			case m.reg != nil:
				return res, fmt.Errorf("archive: write %s: row %d starts at %s, below the watermark the ledger recorded: %w",
					t.Name, late[0], cold.FormatTime(rows[late[0]].From), m.reg)
			case coldErr != nil:
				return res, &series.Error{Kind: series.Unavailable, Op: "write", Table: t.Name,
					Err: fmt.Errorf("row %d starts at %s, below the watermark %s, and needs the cold tier: %w",
						late[0], cold.FormatTime(rows[late[0]].From), cold.FormatTime(m.w), coldErr)}
			}
			lr, err := rt.cold.AppendLate(ctx, ct, rt.stamp(t, pick(rows, late)))
			var q *series.QuarantineError
			if errors.As(err, &q) {
				// Not the delivery's fault, and not for good: it goes in
				// once an operator has resolved the quarantine.
				return res, &series.Error{Kind: series.Unavailable, Op: "write", Table: t.Name,
					Err: fmt.Errorf("row %d starts at %s, below the watermark %s, and needs the cold tier, which is quarantined until an operator resolves it; retry then: %w",
						late[0], cold.FormatTime(rows[late[0]].From), cold.FormatTime(m.w), err)}
			}
			if err != nil {
				return res, cold.Unavailable("write", t.Name, remap(err, late))
			}
			res.record(late, lr.Status)
			res.Late += len(late)
		}
		if len(fresh) == 0 {
			return res, nil
		}
		if reread && coldErr != nil {
			// The rows' partitions were being archived, and whether the
			// archival committed only the cold tier can tell.
			return res, &series.Error{Kind: series.Unavailable, Op: "write", Table: t.Name,
				Err: fmt.Errorf("row %d starts at %s, in a window being archived: %w", fresh[0], cold.FormatTime(rows[fresh[0]].From), coldErr)}
		}
		hr, err := rt.hot.WriteWith(ctx, t, pick(rows, fresh), o)
		if err == nil {
			res.record(fresh, hr.Status)
			if hr.Versions != nil {
				// Substitutes are hot only: fresh is every row.
				res.Versions = make([]uint64, len(rows))
				for k, i := range fresh {
					res.Versions[i] = hr.Versions[k]
				}
			}
			return res, nil
		}
		if !errors.Is(err, hot.ErrNoPartition) {
			return res, remap(err, fresh)
		}
		archiving, perr := rt.partitions(ctx, t, rows, fresh, err)
		if perr != nil {
			return res, perr
		}
		if attempt == writeAttempts {
			return res, &series.Error{Kind: series.Unavailable, Op: "write", Table: t.Name,
				Err: fmt.Errorf("partitions are being archived; retry: %w", remap(err, fresh))}
		}
		pending, reread = fresh, archiving
		if !archiving {
			continue // the partitions are there now
		}
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// watermark returns the mark to route t by: the one last read unless
// reread is set or there is none, else W read from the catalog and vetted
// (read is then true). If the catalog cannot be read, coldErr says why,
// and the mark is the last one read or, failing that, the ledger's: a W at
// most the true one, which the hot tier makes safe to route by. err is set
// only when there is no mark at all.
func (rt *Router) watermark(ctx context.Context, t *series.Table, ct *cold.Table, reread bool) (m mark, read bool, coldErr, err error) {
	rt.mu.Lock()
	m, known := rt.marks[t.Name]
	rt.mu.Unlock()
	if known && !reread {
		return m, false, nil, nil
	}
	var (
		w, rerr = time.Time{}, error(nil)
		ok      bool
		vetErr  error
	)
	look := func(ctx context.Context) (time.Time, bool, error) {
		w, ok, rerr = rt.cold.Watermark(ctx, ct)
		return w, ok, rerr
	}
	if rt.Vet != nil {
		_, _, vetErr = rt.Vet(ctx, t.Name, look)
	} else {
		look(ctx)
	}
	if rerr == nil {
		m, err := rt.vet(t, w, ok, vetErr)
		if err != nil {
			return mark{}, true, nil, err
		}
		return rt.remember(t.Name, m, true), true, nil, nil
	}
	coldErr = cold.Unavailable("write", t.Name, fmt.Errorf("archive: write %s: %w", t.Name, rerr))
	if !cold.Unreachable(rerr) {
		return mark{}, true, nil, coldErr
	}
	if known {
		return m, true, coldErr, nil
	}
	if rt.Recorded == nil {
		return mark{}, true, nil, coldErr
	}
	lw, lok, lerr := rt.Recorded(ctx, t.Name)
	if lerr != nil {
		return mark{}, true, nil, errors.Join(coldErr, lerr)
	}
	return rt.remember(t.Name, mark{w: lw, ok: lok}, false), true, coldErr, nil
}

// split divides the rows idx of rows into those below m's W and the rest.
func split(rows []series.Reading, idx []int, m mark) (late, fresh []int) {
	for _, i := range idx {
		if m.ok && rows[i].From.Before(m.w) {
			late = append(late, i)
		} else {
			fresh = append(fresh, i)
		}
	}
	return late, fresh
}

// vet returns the mark of the watermark wm read from the catalog, which
// Vet judged err. When the catalog's log lost entries (a
// *WatermarkRegression), rows at or above the watermark the ledger
// recorded belong to the hot tier whatever the log says, and are routed by
// it; a row below it would need the cold tier, and the write is refused
// before anything is written.
func (rt *Router) vet(t *series.Table, wm time.Time, hasW bool, err error) (mark, error) {
	if err == nil {
		return mark{w: wm, ok: hasW}, nil
	}
	var reg *WatermarkRegression
	if !errors.As(err, &reg) {
		return mark{}, fmt.Errorf("archive: write %s: %w", t.Name, err)
	}
	return mark{w: reg.Expected, ok: true, reg: err}, nil
}

// partitions looks at the rows of the hot part fresh that err, a
// hot.ErrNoPartition refusal, names. A row whose partition is missing gets
// it created, unless it lies beyond the accept horizon, which refuses the
// batch. archiving reports that a row's partition is detached or below the
// partition floor: an archival moves its window, and W is to be read anew.
func (rt *Router) partitions(ctx context.Context, t *series.Table, rows []series.Reading, fresh []int, err error) (archiving bool, _ error) {
	var e *series.Error
	if !errors.As(err, &e) || len(e.Rows) == 0 {
		return false, remap(err, fresh)
	}
	parts, perr := rt.hot.Partitions(ctx, t)
	if perr != nil {
		return false, errors.Join(remap(err, fresh), perr)
	}
	state := make(map[int64]bool, len(parts)) // by start: attached
	for _, p := range parts {
		state[p.From.Unix()] = p.Attached
	}
	now := rt.clock()
	limit := t.Width.Start(now.Add(rt.acceptAhead()))
	var far series.Problems
	var missing []time.Time
	for _, k := range e.Rows {
		if k < 0 || k >= len(fresh) {
			return false, remap(err, fresh)
		}
		i := fresh[k]
		start := t.Width.Start(rows[i].From)
		attached, exists := state[start.Unix()]
		switch {
		case attached: // created since
		case exists:
			archiving = true
		case start.After(limit):
			far.Add(i, "from %s is beyond the accept horizon: partitions are created on demand up to %s, accept_ahead %s past now (%s)",
				cold.FormatTime(rows[i].From), cold.FormatTime(t.Width.Next(limit)), days(rt.acceptAhead()), cold.FormatTime(now))
		case !slices.ContainsFunc(missing, start.Equal):
			missing = append(missing, start)
		}
	}
	if err := far.Err(series.InvalidInput, "write", t.Name); err != nil {
		return false, err
	}
	for _, start := range missing {
		_, cerr := rt.hot.CreatePartitions(ctx, t, start, start)
		switch {
		case errors.Is(cerr, hot.ErrBelowFloor), errors.Is(cerr, hot.ErrDeferred):
			archiving = true
		case cerr != nil:
			return false, fmt.Errorf("archive: write %s: create the partition of %s: %w", t.Name, start.Format(time.DateOnly), cerr)
		}
	}
	return archiving, nil
}

// stamp fills in the transaction time, the same for the whole batch, which
// the hot tier takes from the database; AppendLate derives the balancing
// day as the hot tier does.
func (rt *Router) stamp(t *series.Table, rs []series.Reading) []series.Reading {
	now := rt.clock().UTC().Truncate(time.Microsecond)
	for i := range rs {
		r := &rs[i]
		r.RecordedAt = now
	}
	return rs
}

// days formats d as the configuration writes it when it is whole days.
func days(d time.Duration) string {
	if d > 0 && d%(24*time.Hour) == 0 {
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	}
	return d.String()
}

func (r *WriteResult) record(idx []int, status []series.Status) {
	for k, i := range idx {
		r.Status[i] = status[k]
		r.Count(status[k])
	}
}

func pick(rows []series.Reading, idx []int) []series.Reading {
	out := make([]series.Reading, len(idx))
	for k, i := range idx {
		out[k] = rows[i]
	}
	return out
}

// remap returns err with the row numbers of a *hot.Error, which count
// within the part idx of the batch, translated to the whole batch.
func remap(err error, idx []int) error {
	var e *series.Error
	if !errors.As(err, &e) {
		return err
	}
	c := *e
	c.Rows = make([]int, len(e.Rows))
	for k, i := range e.Rows {
		if i < 0 || i >= len(idx) {
			return err // not row numbers of this part: leave them alone
		}
		c.Rows[k] = idx[i]
	}
	c.Problems = make([]series.Problem, len(e.Problems))
	for k, p := range e.Problems {
		if p.Row >= 0 && p.Row < len(idx) {
			p.Row = idx[p.Row]
		}
		p.Reason = p.RenameRow(func(i int) (string, bool) {
			if i < 0 || i >= len(idx) {
				return "", false
			}
			return "row " + strconv.Itoa(idx[i]), true
		})
		c.Problems[k] = p
	}
	return &c
}

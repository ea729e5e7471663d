package archive

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/internal/hot"
	"github.com/meterstore/meterstore/series"
)

// writeAttempts bounds how often Router.Write re-routes rows whose partition
// an archival is detaching; the waits between attempts double from
// writeBackoff, about 2.5 s in all.
const (
	writeAttempts = 9
	writeBackoff  = 10 * time.Millisecond
)

// A Router stores readings in the tier their From belongs to: below the
// watermark in the cold tier, as a late correction that leaves W where it
// is, and at or above it in the hot tier. Nothing is ever written to
// PostgreSQL below W, where no query would look.
type Router struct {
	hot  *hot.Tier
	cold *cold.Tier
	// clock gives the transaction time of late corrections, which the hot
	// tier would take from the database.
	clock func() time.Time
	// Check, if set, vets every watermark Write reads before it routes by
	// it; Archiver.CheckWatermark is the one to install.
	Check func(ctx context.Context, table string, w time.Time, ok bool) error
}

// NewRouter returns a Router on the two tiers.
func NewRouter(h *hot.Tier, c *cold.Tier) *Router {
	return &Router{hot: h, cold: c, clock: time.Now}
}

// A WriteResult reports what Write did with each row.
type WriteResult struct {
	Status   []series.Status // per row, in order: Inserted or Present
	Inserted int
	Present  int
	Late     int // rows routed to the cold tier
}

// Write stores rows of table t, whose cold table is ct.
//
// The rows below W go first, as one cold append, after the restated-value
// check against the cold readings of the same key; then the rest go to the
// hot tier as one batch. Each part is atomic, the batch as a whole is not:
// if the hot part fails, the cold part stays. Redelivering an identical row
// is a no-op in both tiers, so retrying the whole batch is safe and is how a
// caller completes it.
//
// A hot row can find its partition detached by an archival that has not
// committed yet. Write then waits, re-reads W and routes the row again, a
// bounded number of times; if the archival is still not done it returns a
// retryable error.
func (rt *Router) Write(ctx context.Context, t *series.Table, ct *cold.Table, rows []series.Reading) (WriteResult, error) {
	res := WriteResult{Status: make([]series.Status, len(rows))}
	pending := make([]int, len(rows))
	for i := range pending {
		pending[i] = i
	}
	wait := writeBackoff
	for attempt := 1; ; attempt++ {
		wm, hasW, err := rt.cold.Watermark(ctx, ct)
		if err != nil {
			return res, fmt.Errorf("archive: write %s: %w", t.Name, err)
		}
		if wm, hasW, err = rt.vet(ctx, t, wm, hasW, rows, pending); err != nil {
			return res, err
		}
		var late, fresh []int
		for _, i := range pending {
			if hasW && rows[i].From.Before(wm) {
				late = append(late, i)
			} else {
				fresh = append(fresh, i)
			}
		}
		if len(late) > 0 {
			lr, err := rt.cold.AppendLate(ctx, ct, rt.stamp(t, pick(rows, late)))
			if err != nil {
				return res, remap(err, late)
			}
			res.record(late, lr.Status)
			res.Late += len(late)
		}
		if len(fresh) == 0 {
			return res, nil
		}
		hr, err := rt.hot.Write(ctx, t, pick(rows, fresh))
		if err == nil {
			res.record(fresh, hr.Status)
			return res, nil
		}
		detached, perr := rt.archiving(ctx, t, ct, wm, rows, fresh, err)
		if perr != nil {
			return res, errors.Join(remap(err, fresh), perr)
		}
		if !detached {
			return res, remap(err, fresh)
		}
		if attempt == writeAttempts {
			return res, &series.Error{Kind: series.Unavailable, Op: "write", Table: t.Name,
				Err: fmt.Errorf("partitions are being archived; retry: %w", remap(err, fresh))}
		}
		pending = fresh
		select {
		case <-ctx.Done():
			return res, ctx.Err()
		case <-time.After(wait):
		}
		wait *= 2
	}
}

// vet runs Check on the watermark wm read from the catalog. When the
// catalog's log lost entries (a *WatermarkRegression), rows at or above the
// watermark the ledger recorded belong to the hot tier whatever the log
// says, and are routed by it; a row below it would need the cold tier, and
// the write is refused before anything is written.
func (rt *Router) vet(ctx context.Context, t *series.Table, wm time.Time, hasW bool, rows []series.Reading, pending []int) (time.Time, bool, error) {
	if rt.Check == nil {
		return wm, hasW, nil
	}
	err := rt.Check(ctx, t.Name, wm, hasW)
	if err == nil {
		return wm, hasW, nil
	}
	var reg *WatermarkRegression
	if !errors.As(err, &reg) {
		return wm, hasW, fmt.Errorf("archive: write %s: %w", t.Name, err)
	}
	for _, i := range pending {
		if rows[i].From.Before(reg.Expected) {
			return wm, hasW, fmt.Errorf("archive: write %s: row %d starts at %s, below the watermark the ledger recorded: %w",
				t.Name, i, cold.FormatTime(rows[i].From), err)
		}
	}
	return reg.Expected, true, nil
}

// archiving reports whether err refused rows only because an archival
// took their partitions away: W moved past wm since it was read, or their
// partitions are detached and the commit is still to come.
func (rt *Router) archiving(ctx context.Context, t *series.Table, ct *cold.Table, wm time.Time, rows []series.Reading, fresh []int, err error) (bool, error) {
	var e *series.Error
	if !errors.As(err, &e) || e.Kind != series.InvalidInput || len(e.Rows) == 0 {
		return false, nil
	}
	now, _, werr := rt.cold.Watermark(ctx, ct)
	if werr != nil {
		return false, werr
	}
	if now.After(wm) {
		return true, nil
	}
	parts, perr := rt.hot.Partitions(ctx, t)
	if perr != nil {
		return false, perr
	}
	detached := make(map[int64]bool)
	for _, p := range parts {
		if !p.Attached {
			detached[p.From.Unix()] = true
		}
	}
	for _, i := range e.Rows {
		if i < 0 || i >= len(fresh) || !detached[t.Width.Start(rows[fresh[i]].From).Unix()] {
			return false, nil
		}
	}
	return true, nil
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

func (r *WriteResult) record(idx []int, status []series.Status) {
	for k, i := range idx {
		r.Status[i] = status[k]
		switch status[k] {
		case series.Inserted:
			r.Inserted++
		case series.Present:
			r.Present++
		}
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

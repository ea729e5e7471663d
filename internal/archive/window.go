package archive

import (
	"time"

	"github.com/meterstore/meterstore/internal/hot"
	"github.com/meterstore/meterstore/series"
)

// A window is the plan for one commit: the range [from, to) that W moves
// across and the partitions within it, ascending.
type window struct {
	from, to  time.Time
	parts     []hot.Partition
	recovered bool
}

// stepEnd returns the end of the window that starts at w, a partition
// boundary: the last boundary at most step after w, and at least the next
// one.
func stepEnd(width series.Width, w time.Time, step time.Duration) time.Time {
	limit := w.Add(step)
	end := width.Next(w)
	for n := width.Next(end); !n.After(limit); n = width.Next(n) {
		end = n
	}
	return end
}

// horizon returns the latest partition boundary b with b+lag <= now: no
// window may end after it.
func horizon(width series.Width, now time.Time, lag time.Duration) time.Time {
	return width.Start(now.Add(-lag))
}

// nextWindow plans the window that starts at w, given the table's
// partitions (attached and detached, ascending) and the starts (Unix
// seconds) of the detached partitions that the archival ledger records as
// detached by an archival and not yet archived, or reports that none is due.
//
// A detached partition W does not cover that the ledger records (resume)
// comes first, due or not: a cycle detached it and died before the commit,
// and no writer can reach it, so it is archived up to its end; attached
// partitions in between are archived with it only up to the horizon.
// Otherwise the window [w, w+step) is due when its end is not after the
// horizon. A window without partitions widens to the start of the next one,
// or to the last step end within the horizon, so that an empty stretch
// costs one commit, not one per step.
//
// A detached partition W does not cover and the ledger does not record
// (see stray) was detached by someone else: no window reaches past its
// start, so W stops below it until an operator resolves it.
func nextWindow(width series.Width, w time.Time, parts []hot.Partition, resume map[int64]bool, step, lag time.Duration, now time.Time) (window, bool) {
	barrier, stopped := stray(w, parts, resume)
	var recoverTo time.Time
	for _, p := range parts {
		if !p.Attached && p.To.After(w) && resume[p.From.Unix()] && p.To.After(recoverTo) &&
			(!stopped || !p.To.After(barrier.From)) {
			recoverTo = p.To
		}
	}
	hz := horizon(width, now, lag)
	if !recoverTo.IsZero() {
		to := recoverTo
		for _, p := range parts {
			// An attached partition goes with the resumed ones only once
			// it is due itself: a resumed window must not carry W past
			// the settlement lag.
			if p.Attached && !p.From.Before(w) && p.From.Before(to) && p.To.After(hz) {
				to = p.From
				break
			}
		}
		if to.After(w) {
			return window{from: w, to: to, parts: within(parts, w, to), recovered: true}, true
		}
	}
	limit, clipped := hz, false
	if stopped && !barrier.From.After(hz) {
		limit, clipped = barrier.From, true
	}
	end := stepEnd(width, w, step)
	if end.After(limit) {
		if !clipped || !limit.After(w) {
			return window{}, false
		}
		end = limit // the window closes where the stray partition starts
	}
	if in := within(parts, w, end); len(in) > 0 {
		return window{from: w, to: end, parts: in}, true
	}
	lim, next := limit, false
	for _, p := range parts {
		if !p.From.Before(w) {
			lim, next = minTime(p.From, limit), p.From.Equal(minTime(p.From, limit))
			break
		}
	}
	for n := stepEnd(width, end, step); !n.After(lim); n = stepEnd(width, n, step) {
		end = n
	}
	if next && lim.After(end) {
		// The next partition starts off the step grid: close the stretch up
		// to it, so the windows after it start where its rows do.
		end = lim
	}
	return window{from: w, to: end}, true
}

// stray returns the first detached partition that W (w) does not cover
// and that the ledger does not record as detached by an archival (resume):
// an operator's DETACH, pending or done, which the archiver must not take
// for an interrupted archival of its own.
func stray(w time.Time, parts []hot.Partition, resume map[int64]bool) (hot.Partition, bool) {
	for _, p := range parts {
		if !p.Attached && p.To.After(w) && !resume[p.From.Unix()] {
			return p, true
		}
	}
	return hot.Partition{}, false
}

// within returns the partitions that lie in [from, to).
func within(parts []hot.Partition, from, to time.Time) []hot.Partition {
	var out []hot.Partition
	for _, p := range parts {
		if !p.From.Before(from) && !p.To.After(to) {
			out = append(out, p)
		}
	}
	return out
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

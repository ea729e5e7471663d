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
// partitions (attached and detached, ascending), or reports that none is
// due.
//
// A detached partition W does not cover comes first, due or not: a cycle
// detached it and died before the commit, and no writer can reach it, so
// it is archived up to its end. Otherwise the window [w, w+step) is due when
// its end is not after the horizon. A window without partitions widens to the
// start of the next one, or to the last step end within the horizon, so
// that an empty stretch costs one commit, not one per step.
func nextWindow(width series.Width, w time.Time, parts []hot.Partition, step, lag time.Duration, now time.Time) (window, bool) {
	var recoverTo time.Time
	for _, p := range parts {
		if !p.Attached && p.To.After(w) && p.To.After(recoverTo) {
			recoverTo = p.To
		}
	}
	if !recoverTo.IsZero() {
		return window{from: w, to: recoverTo, parts: within(parts, w, recoverTo), recovered: true}, true
	}
	hz := horizon(width, now, lag)
	end := stepEnd(width, w, step)
	if end.After(hz) {
		return window{}, false
	}
	if in := within(parts, w, end); len(in) > 0 {
		return window{from: w, to: end, parts: in}, true
	}
	limit, next := hz, false
	for _, p := range parts {
		if !p.From.Before(w) {
			limit, next = minTime(p.From, hz), p.From.Equal(minTime(p.From, hz))
			break
		}
	}
	for n := stepEnd(width, end, step); !n.After(limit); n = stepEnd(width, n, step) {
		end = n
	}
	if next && limit.After(end) {
		// The next partition starts off the step grid: close the stretch up
		// to it, so the windows after it start where its rows do.
		end = limit
	}
	return window{from: w, to: end}, true
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

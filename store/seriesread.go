package store

import (
	"context"
	"fmt"
	"time"

	"github.com/meterstore/meterstore/metering"
)

// Typed reads of one series: the resolved readings of a market location
// and OBIS code over a time range, its latest reading, and the intervals
// the calendar expects that it lacks. They read the tiers directly, not
// through the SQL engine (typedread.go), with the read options of a
// statement (as of, known at, read mode) meaning what they mean there,
// and return typed values, so that a Go program needs no SQL of its own
// for the common reads.

// A SeriesQuery selects one series of a table and a range of it.
type SeriesQuery struct {
	// MaLo is the market location, checked for its check digit.
	MaLo string
	// OBIS is the OBIS code, in any spelling ParseOBIS takes.
	OBIS string
	// From and To bound the interval starts read, [From, To); a zero
	// bound is open.
	From, To time.Time
	// Qualities, if set, keep the readings of these qualities only.
	Qualities []metering.Quality
	// Identity gives the values of identity columns the series is kept
	// apart by, by name; a column not given is not filtered on.
	Identity map[string]string
	// Resolution is the grid Gaps expects; zero means the table's only
	// accepted resolution.
	Resolution metering.Resolution
	// Read chooses the state and the tiers read.
	Read ReadOptions
}

// A Gap is an interval [From, To) the calendar expects of a series and no
// reading of it covers.
type Gap struct {
	From, To time.Time
}

// MaxGapIntervals bounds the intervals Gaps expects in one call: a decade
// of quarter hours.
const MaxGapIntervals = 10 * 366 * 100

// SeriesReadings returns the resolved readings of the series q selects in
// table name, by interval start: per merge key the winning version, as
// readings has it.
func (s *Store) SeriesReadings(ctx context.Context, name string, q SeriesQuery) ([]Reading, error) {
	res, err := s.typedRead(ctx, name, q, false)
	if err != nil {
		return nil, err
	}
	return res.Readings, nil
}

// LatestReading returns the reading of the series q selects in table name
// with the latest interval start, and false if it has none in q's range.
func (s *Store) LatestReading(ctx context.Context, name string, q SeriesQuery) (Reading, bool, error) {
	res, err := s.typedRead(ctx, name, q, true)
	if err != nil || len(res.Readings) == 0 {
		return Reading{}, false, err
	}
	return res.Readings[len(res.Readings)-1], true, nil
}

// Gaps returns the intervals of q's range, which must be bounded, that the
// calendar expects of the series at q's resolution and no reading of it
// covers: every step of a fixed resolution, every balancing day (06:00 to
// 06:00 for gas) of a day's. It refuses a range of more than
// MaxGapIntervals intervals.
func (s *Store) Gaps(ctx context.Context, name string, q SeriesQuery) ([]Gap, error) {
	t, err := s.table(name)
	if err != nil {
		return nil, err
	}
	if q.From.IsZero() || q.To.IsZero() || !q.From.Before(q.To) {
		return nil, fmt.Errorf("store: gaps of %s: want a bounded range, From before To", name)
	}
	r := q.Resolution
	if r == 0 {
		rs := t.decl.AcceptedResolutions()
		if len(rs) != 1 {
			return nil, fmt.Errorf("store: gaps of %s: the table accepts %d resolutions; name one", name, len(rs))
		}
		r = rs[0]
	}
	cal, err := metering.NewCalendar()
	if err != nil {
		return nil, err
	}
	com := t.decl.Commodity
	if com == 0 {
		com = metering.Electricity
	}
	// The first interval of the grid at or after From.
	slot := cal.BalancingDayStart(cal.BalancingDay(q.From, com), com)
	if step, ok := r.Fixed(); ok {
		slot = q.From.Truncate(step)
	}
	for slot.Before(q.From) {
		slot = cal.Next(slot, r)
	}
	var slots []time.Time
	for ; slot.Before(q.To); slot = cal.Next(slot, r) {
		if len(slots) == MaxGapIntervals {
			return nil, fmt.Errorf("store: gaps of %s: more than %d intervals of %s from %s to %s; ask for a shorter range",
				name, MaxGapIntervals, r, q.From.UTC().Format(time.RFC3339), q.To.UTC().Format(time.RFC3339))
		}
		slots = append(slots, slot)
	}
	rs, err := s.SeriesReadings(ctx, name, q)
	if err != nil {
		return nil, err
	}
	covered := make(map[int64]bool, len(rs))
	for _, rd := range rs {
		covered[rd.From.UnixMicro()] = true
	}
	var gaps []Gap
	for _, sl := range slots {
		if covered[sl.UnixMicro()] {
			continue
		}
		end := cal.Next(sl, r)
		if n := len(gaps); n > 0 && gaps[n-1].To.Equal(sl) {
			gaps[n-1].To = end // one gap of consecutive intervals
			continue
		}
		gaps = append(gaps, Gap{From: sl, To: end})
	}
	return gaps, nil
}

package query

import (
	"context"
	"strings"
	"time"

	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// A RollupSource is a Source that also has the stored daily rollup of its
// table (see cold.Tier.CatchUpRollup), which the relation daily reads for
// the days it holds.
type RollupSource interface {
	// Rollup plans the local files of the rollup that reflects snapshot
	// source of the cold table, for the days q bounds; ok is false if no
	// rollup reflects it.
	Rollup(ctx context.Context, source int64, q series.Range) (p cold.Plan, ok bool, err error)
	// RollupCurrent plans the local files of the rollup's current
	// snapshot as Rollup does, and returns the snapshot it reflects; the
	// plan's Watermark is that snapshot's.
	RollupCurrent(ctx context.Context, q series.Range) (p cold.Plan, source int64, ok bool, err error)
}

var _ RollupSource = (*TableSource)(nil)

// Rollup plans the rollup that reflects snapshot source and makes its
// files local, vetted as every cold plan is.
func (s *TableSource) Rollup(ctx context.Context, source int64, q series.Range) (cold.Plan, bool, error) {
	p, ok, err := s.ColdTier.PlanRollup(ctx, s.ColdTable, source, q)
	if err != nil || !ok {
		return cold.Plan{}, false, s.found(ctx, err)
	}
	lp, err := s.local(ctx, p)
	return lp, err == nil, err
}

// RollupCurrent plans the rollup's current snapshot and makes its files
// local, vetted as every cold plan is.
func (s *TableSource) RollupCurrent(ctx context.Context, q series.Range) (cold.Plan, int64, bool, error) {
	p, source, ok, err := s.ColdTier.PlanRollupCurrent(ctx, s.ColdTable, q)
	if err != nil || !ok {
		return cold.Plan{}, 0, false, s.found(ctx, err)
	}
	lp, err := s.local(ctx, p)
	return lp, source, err == nil, err
}

// A storedDays is the part of daily the rollup answers: the days ending at
// or before w, from files.
type storedDays struct {
	files []string
	// versions are the rollup versions of each file's rows, by the
	// files' metrics (see cold.Plan.Versions).
	versions []cold.VersionRange
	w        time.Time
	source   int64 // the snapshot of the table it reflects
}

// storedDaily returns the rollup that answers daily's settled days for the
// read tr of table e, if one does: only in an automatic read that sees
// every version recorded (no known_at), of a snapshot with a watermark,
// whose rollup reflects exactly that snapshot. Otherwise daily is computed
// from readings, which is exact too.
func (e *reader) storedDaily(ctx context.Context, tr *TableRead, r series.Range, o ReadOptions) (*storedDays, error) {
	rs, ok := e.src.(RollupSource)
	if !ok || o.Mode != ReadAuto || !o.KnownAt.IsZero() || !tr.HasWatermark || tr.Snapshot == 0 {
		return nil, nil
	}
	p, ok, err := rs.Rollup(ctx, tr.Snapshot, r)
	if err != nil || !ok {
		return nil, err
	}
	return &storedDays{files: p.Files, versions: p.Versions, w: tr.Watermark, source: tr.Snapshot}, nil
}

// peekDaily returns the rollup's current snapshot for a statement that
// reads daily alone of its table, in a current automatic read without
// known_at, and the range of readings the days after its watermark need:
// those from recentFrom of it (see storedDailySQL). The
// caller reads that range, and uses the rollup only if the read's
// snapshot is the one it reflects. Without a rollup it returns r.
func (e *reader) peekDaily(ctx context.Context, r series.Range, o ReadOptions) (*storedDays, series.Range, error) {
	rs, ok := e.src.(RollupSource)
	if !ok || o.Mode != ReadAuto || !o.KnownAt.IsZero() || o.asOf() {
		return nil, r, nil
	}
	p, source, ok, err := rs.RollupCurrent(ctx, r)
	if err != nil || !ok || !p.HasWatermark {
		return nil, r, err
	}
	after := recentFrom(p.Watermark)
	if !r.To.IsZero() && !r.To.After(p.Watermark) {
		// Every day of the statement ends at or before the rollup's
		// watermark, so no reading is aggregated, but a statement's range
		// stays non-empty to read the snapshot it must match.
		after = r.To.Add(-time.Microsecond)
	}
	narrow := r
	if narrow.From.Before(after) {
		narrow.From = after
	}
	return &storedDays{files: p.Files, versions: p.Versions, w: p.Watermark, source: source}, narrow, nil
}

// recentFrom returns where the readings begin that daily's days ending
// after w need: the earliest start of the balancing days, of every
// commodity, that contain w. A day that begins earlier ends at or before
// w and comes from the rollup, so the archived readings of the days
// before w's are not read again. Without the calendar, w less 25 hours,
// the longest day.
func recentFrom(w time.Time) time.Time {
	if calendarErr != nil {
		return w.Add(-25 * time.Hour)
	}
	lo := w
	for com := metering.Commodity(1); com.Valid(); com++ {
		if s := calendar.BalancingDayStart(calendar.BalancingDay(w, com), com); s.Before(lo) {
			lo = s
		}
	}
	return lo
}

// recentReadings returns the condition on the readings daily's days
// ending after w need: those from recentFrom(w) on, and of those, the
// readings of each commodity from the start of its own balancing day that
// contains w, since the earlier ones' days end at or before w (a gas day
// begins at 06:00, up to 18 hours before the day of electricity).
func recentReadings(w time.Time) string {
	lo := recentFrom(w)
	cond := `"from" >= ` + timestamptz(lo)
	if calendarErr != nil {
		return cond
	}
	var whens []string
	for com := metering.Commodity(1); com.Valid(); com++ {
		start := calendar.BalancingDayStart(calendar.BalancingDay(w, com), com)
		whens = append(whens, `WHEN `+quote(com.String())+` THEN `+timestamptz(start))
	}
	return cond + ` AND "from" >= CASE sparte ` + strings.Join(whens, " ") + ` ELSE ` + timestamptz(lo) + ` END`
}

// recentDays returns the condition that a row of daily (balancing_day,
// sparte, "to") is of a day that ends after w: for a known commodity, its
// balancing day is the one containing w or a later one, a constant to
// compare with, where "to" calls the calendar once a row.
func recentDays(w time.Time) string {
	after := `"to" > ` + timestamptz(w)
	if calendarErr != nil {
		return after
	}
	var whens []string
	for com := metering.Commodity(1); com.Valid(); com++ {
		whens = append(whens, `WHEN `+quote(com.String())+` THEN balancing_day >= DATE '`+calendar.BalancingDay(w, com).String()+`'`)
	}
	return `CASE sparte ` + strings.Join(whens, " ") + ` ELSE ` + after + ` END`
}

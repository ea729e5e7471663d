package query

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// The relation completeness of an interval table: per series (malo_id,
// obis_code and the identity columns) and balancing day of the statement's
// range, the intervals the Berlin calendar expects against those present
// in readings, so with versions resolved:
//
//	malo_id, obis_code, <identity columns>   the series
//	sparte, resolution                       what its intervals are expected to be
//	balancing_day DATE                       the local day, the gas day for GAS
//	from, to TIMESTAMPTZ                     where the day begins and ends
//	expected BIGINT                          92, 96 or 100 quarter hours; 23, 24 or 25 hours; 1 for P1D
//	present BIGINT                           intervals of the expected resolution on its grid within the day
//	missing BIGINT                           expected - present, on a day that is due; else 0
//	surplus BIGINT                           the day's other intervals: off the grid, outside the day, another resolution
//	due BOOLEAN                              the day's deliveries are due: it ended Settings.DeliveryLag before ReadOptions.Now
//
// The range is the balancing days the statement bounds: top-level
// conjuncts comparing balancing_day with a constant, if the statement
// reads completeness once and nothing else of the tiers (see analyze);
// otherwise the days from the first to the last balancing_day stored. A
// series is expected from the range's first day if it delivered anything
// in the CompletenessLookback days before it ("seen before"), else from the
// first day it delivered in the range, to the range's last day: a series
// silent throughout the range but seen before is missing on every day.
// Its expected resolution and sparte on a day are those most of its
// intervals of that day have (the finer resolution on a tie), or on a day
// without any, those of the last day it delivered. Intervals of a
// resolution coarser than a day are not counted.

// CompletenessLookback is how many balancing days before a range a series
// counts as seen before. It bounds what a query of completeness reads: the
// range and as many days before it, of which only the columns naming the
// series are read from the cold files.
const CompletenessLookback = 31

// A dayRange is a range of balancing days, both ends included; an end
// that is not set is open.
type dayRange struct {
	lo, hi       metering.Date
	hasLo, hasHi bool
}

func isCompleteness(name string) bool { return strings.EqualFold(name, "completeness") }

// completeness bounds a statement that reads the relation completeness and
// no other relation of the tiers: a.days by its constraints on
// balancing_day, a.Range by the readings those days need, with the
// lookback, and a.MaLo by its constraint on malo_id.
func (a *analysis) completeness(ctx context.Context, q querier, node map[string]any, self string) error {
	cs, malo := constraintsOn(node, isCompleteness, "balancing_day", self)
	a.MaLo = malo
	if len(cs) == 0 {
		return nil
	}
	d, err := evaluateDays(ctx, q, cs)
	if err != nil {
		return err
	}
	if calendarErr != nil {
		return fmt.Errorf("query: %w", calendarErr)
	}
	a.days = d
	switch {
	case d.hasLo && d.hasHi && d.lo.Compare(d.hi) > 0:
		a.Range.From, a.Range.To = epoch, epoch
		return nil
	case d.hasLo:
		// Midnight begins a balancing day of every commodity no later than 06:00.
		a.Range.From = calendar.DayStart(d.lo.AddDays(-CompletenessLookback))
	}
	if d.hasHi {
		a.Range.To = calendar.GasDayEnd(d.hi)
	}
	return nil
}

// evaluateDays casts every constraint's constant to TIMESTAMP, as
// comparing it with the DATE balancing_day does, and intersects the
// constraints into days. A constant with a time of day bounds the range by
// its day, a day more than it must: the range is then wider, never narrower.
func evaluateDays(ctx context.Context, q querier, cs []constraint) (dayRange, error) {
	xs, args := exprs(cs, "TIMESTAMP")
	vals := make([]any, len(cs))
	dest := make([]any, len(cs))
	for i := range cs {
		dest[i] = &vals[i]
	}
	if err := q.QueryRowContext(ctx, `SELECT `+strings.Join(xs, ", "), args...).Scan(dest...); err != nil {
		return dayRange{}, fmt.Errorf("query: evaluate the bounds of balancing_day: %w", err)
	}
	var r dayRange
	lower := func(d metering.Date) {
		if !r.hasLo || d.Compare(r.lo) > 0 {
			r.lo, r.hasLo = d, true
		}
	}
	upper := func(d metering.Date) {
		if !r.hasHi || d.Compare(r.hi) < 0 {
			r.hi, r.hasHi = d, true
		}
	}
	for i, c := range cs {
		t, ok := vals[i].(time.Time)
		if !ok || t.Before(minBound) || !t.Before(maxBound) {
			continue
		}
		t = t.UTC()
		y, m, dd := t.Date()
		d := metering.Date{Year: y, Month: m, Day: dd}
		exact := t.Equal(time.Date(y, m, dd, 0, 0, 0, 0, time.UTC))
		switch c.op {
		case "=":
			lower(d)
			upper(d)
		case ">=":
			lower(d)
		case "<=":
			upper(d)
		case ">":
			if exact {
				d = d.AddDays(1)
			}
			lower(d)
		case "<":
			if exact {
				d = d.AddDays(-1)
			}
			upper(d)
		}
	}
	return r, nil
}

// countedResolutions are the resolutions completeness counts: those a
// balancing day holds a whole number of.
var countedResolutions = []metering.Resolution{
	metering.FiveMinutes, metering.QuarterHour, metering.HalfHour, metering.Hour, metering.Day,
}

// createCompleteness creates the view completeness in p's schema over its
// relation daily for the days d, if the table is an interval table, with
// the statement's lockdown; a day that ends at or before dueBy is due.
func createCompleteness(inst *instance, t *series.Table, l layout, p place, d dayRange, dueBy time.Time) {
	if t.TimeModel != series.Interval {
		return
	}
	inst.define(`CREATE VIEW ` + database + `.` + rel(p.out, "completeness") + ` AS ` + completenessSQL(l, p, d, dueBy))
}

// resolutionStep returns a CASE over the column resolution giving the
// step of each counted resolution in microseconds (a day's 24 hours for
// P1D), NULL for any other: to find the grid and to prefer the finer of
// two resolutions.
func resolutionStep() string {
	var b strings.Builder
	b.WriteString(`CASE resolution`)
	for _, r := range countedResolutions {
		us := int64(24 * time.Hour / time.Microsecond)
		if s, ok := r.Fixed(); ok {
			us = int64(s / time.Microsecond)
		}
		fmt.Fprintf(&b, ` WHEN %s THEN %d`, quote(r.String()), us)
	}
	b.WriteString(` END`)
	return b.String()
}

// completenessSQL returns the SELECT of the relation completeness over the
// days d of p's relation daily, a day due if it ends at or before dueBy;
// see the comment at the top of this file. daily's rows give what each
// series delivered on a day (present, and of those on_grid); the grid of
// days from each series' first gives the days it was silent.
func completenessSQL(l layout, p place, d dayRange, dueBy time.Time) string {
	var keys []string
	for _, k := range l.key {
		if k != "from" {
			keys = append(keys, ident(k))
		}
	}
	list := func(prefix string) string {
		out := make([]string, len(keys))
		for i, k := range keys {
			out[i] = prefix + k
		}
		return strings.Join(out, ", ")
	}
	nn := make([]string, len(keys))
	for i, k := range keys {
		nn[i] = k + " IS NOT NULL"
	}
	notNull := strings.Join(nn, " AND ")
	step := resolutionStep()
	var names []string
	for _, r := range countedResolutions {
		names = append(names, quote(r.String()))
	}
	counted := `resolution IN (` + strings.Join(names, ", ") + `)`
	date := func(x metering.Date) string { return `DATE ` + quote(x.String()) }

	src := rel(p.out, "daily")
	lo, hi := `(SELECT min(balancing_day) FROM `+src+`)`, `(SELECT max(balancing_day) FROM `+src+`)`
	inRange := ""
	if d.hasLo {
		lo = date(d.lo)
		inRange += ` AND balancing_day >= ` + date(d.lo)
	}
	if d.hasHi {
		hi = date(d.hi)
		inRange += ` AND balancing_day <= ` + date(d.hi)
	}
	// Seen before: the series that delivered in the lookback, each with the
	// kind of its last day there, placed on the day before the range.
	seen := ""
	if d.hasLo {
		first := d.lo.AddDays(-CompletenessLookback)
		seen = `
	UNION ALL
	SELECT ` + list("") + `, ` + date(d.lo.AddDays(-1)) + ` AS balancing_day, sparte, resolution,
		CAST(0 AS BIGINT) AS present, CAST(0 AS BIGINT) AS surplus
	FROM (SELECT ` + list("") + `, balancing_day, sparte, resolution, sum(on_grid) AS good, sum(present) AS n
		FROM ` + src + `
		WHERE ` + counted + ` AND balancing_day >= ` + date(first) + ` AND balancing_day < ` + date(d.lo) + `
		GROUP BY ALL)
	QUALIFY row_number() OVER (PARTITION BY ` + list("") + ` ORDER BY balancing_day DESC, good DESC, n DESC, ` + step + `, sparte) = 1`
	}
	return `
WITH bounds AS (
	SELECT CAST(` + lo + ` AS DATE) AS lo, CAST(` + hi + ` AS DATE) AS hi
), days AS (
	SELECT CAST(unnest(generate_series(CAST(lo AS TIMESTAMP), CAST(hi AS TIMESTAMP), INTERVAL 1 DAY)) AS DATE) AS balancing_day
	FROM bounds
), cal AS (
	-- Each day of the range for each commodity, with where it begins and ends.
	SELECT balancing_day, sparte,
		meter_balancing_day_start(balancing_day, sparte) AS day_from,
		meter_balancing_day_end(balancing_day, sparte) AS day_to
	FROM days, (VALUES ('STROM'), ('GAS'), ('WAERME'), ('WASSER')) AS c(sparte)
), counts AS (
	-- Per series, day and resolution: the intervals, and those on the
	-- resolution's grid within the day.
	SELECT ` + list("") + `, sparte, resolution, balancing_day, sum(present) AS n, sum(on_grid) AS good
	FROM ` + src + `
	WHERE ` + counted + inRange + `
	GROUP BY ALL
), known AS (
	-- Per series, the days it delivered on, each with the resolution most
	-- of its intervals have; then the series seen before the range.
	(SELECT ` + list("") + `, balancing_day, sparte, resolution, CAST(good AS BIGINT) AS present,
		CAST(sum(n) OVER (PARTITION BY ` + list("") + `, balancing_day) - good AS BIGINT) AS surplus
	FROM counts
	QUALIFY row_number() OVER (PARTITION BY ` + list("") + `, balancing_day ORDER BY good DESC, n DESC, ` + step + `, sparte) = 1)` + seen + `
), spans AS (
	-- Each day a series delivered on (or was seen before) stands for the
	-- days up to its next one, or to the range's last: the days of the
	-- grid come from expanding these spans rather than from an ASOF join
	-- of every series' day with known, which DuckDB plans as a nested loop
	-- (5 s for 5,000 series over 90 days). A series with a NULL in its
	-- key has no day, as the join's equalities gave it none.
	SELECT *, coalesce(lead(balancing_day) OVER (PARTITION BY ` + list("") + ` ORDER BY balancing_day) - 1, (SELECT hi FROM bounds)) AS until
	FROM known WHERE ` + notNull + `
), grid AS (
	SELECT * EXCLUDE (balancing_day), balancing_day AS known_day,
		CAST(unnest(generate_series(CAST(greatest(balancing_day, (SELECT lo FROM bounds)) AS TIMESTAMP), CAST(until AS TIMESTAMP), INTERVAL 1 DAY)) AS DATE) AS balancing_day
	FROM spans
), rows AS (
	-- Each day of a series with its last day of delivery up to it.
	SELECT ` + list("g.") + `, g.sparte, g.resolution, g.balancing_day, c.day_from, c.day_to,
		-- What meter_expected_intervals gives, in arithmetic rather than a
		-- call into Go for each of a fleet's days.
		CAST(CASE g.resolution WHEN 'P1D' THEN 1 ELSE (epoch_us(c.day_to) - epoch_us(c.day_from)) // (` + strings.ReplaceAll(step, "resolution", "g.resolution") + `) END AS BIGINT) AS expected,
		CASE WHEN g.known_day = g.balancing_day THEN g.present ELSE 0 END AS present,
		CASE WHEN g.known_day = g.balancing_day THEN g.surplus ELSE 0 END AS surplus
	FROM grid AS g
	JOIN cal AS c ON c.balancing_day = g.balancing_day AND c.sparte = g.sparte
)
SELECT ` + list("") + `, sparte, resolution, balancing_day, day_from AS "from", day_to AS "to",
	expected, present, CASE WHEN due THEN expected - present ELSE 0 END AS missing, surplus, due
FROM (SELECT *, day_to <= ` + timestamptz(dueBy) + ` AS due FROM rows)`
}

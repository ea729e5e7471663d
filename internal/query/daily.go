package query

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// The relation daily of an interval table: per series and balancing day,
// what GROUP BY over readings gives, so with versions resolved and with
// as of, known_at and the read mode applied exactly as for readings:
//
//	malo_id, obis_code, <identity columns>   the series
//	balancing_day DATE                       the local day, the gas day for GAS
//	sparte, resolution, unit                 of the day's intervals
//	from, to TIMESTAMPTZ                     where the day begins and ends
//	expected BIGINT                          92, 96 or 100 quarter hours; 23, 24 or 25 hours; 1 for P1D;
//	                                         NULL for a resolution coarser than a day
//	present BIGINT                           the day's intervals (resolved readings)
//	on_grid BIGINT                           those on the resolution's grid within the day (at its
//	                                         start for P1D), which completeness counts as present;
//	                                         0 for a resolution coarser than a day
//	value_sum DECIMAL(38,6)                  the sum of their values
//	quality_<code> BIGINT                    how many have that quality, one column per MSCONS code
//	                                         (quality_220, quality_67, ..., quality_z18)
//	max_version DECIMAL(20,0)                the highest version among them
//	max_recorded_at TIMESTAMPTZ              the latest recorded_at among them
//
// A series has one row a day, or one for each sparte, resolution and unit
// it delivered that day, so that no sum adds values of different units.
// Days are bounded by a statement's top-level conjuncts on balancing_day
// (and malo_id) when it reads daily once and nothing else of its table.
//
// In an automatic read without known_at, current or as of a snapshot S,
// the days ending at or before S's watermark come from the stored rollup
// (see cold.Tier.CatchUpRollup) if a rollup snapshot names S, and the
// later days are aggregated from readings; in every other read (the
// rollup behind S, known_at, a historical or operational read) all days
// are aggregated from readings, exact by construction, only slower.

func isDaily(name string) bool { return strings.EqualFold(name, "daily") }

// dailyRange bounds a statement that reads the relation daily once and
// no other relation of its table: a.Range by the readings of the days its
// constraints on balancing_day select, and a.MaLo by its constraint on
// malo_id.
func (a *analysis) dailyRange(ctx context.Context, q querier, node map[string]any, self string) error {
	cs, malo := constraintsOn(node, isDaily, "balancing_day", self)
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
	switch {
	case d.hasLo && d.hasHi && d.lo.Compare(d.hi) > 0:
		a.Range.From, a.Range.To = epoch, epoch
		return nil
	case d.hasLo:
		// Midnight begins a balancing day of every commodity no later than 06:00.
		a.Range.From = calendar.DayStart(d.lo)
	}
	if d.hasHi {
		a.Range.To = calendar.GasDayEnd(d.hi)
	}
	return nil
}

// createDaily creates the view daily in p's schema over its readings, if
// the table is an interval table, and over the stored rollup's days if
// stored is not nil. Where the read of p's tiers allows, the hot tier
// sums the days of its rows itself (hotDays), and copies (hotdays.go)
// serve the partitions they hold. The view is created with the
// statement's lockdown; files are the copies it reads.
func createDaily(ctx context.Context, inst *instance, e *reader, copies *dayCopies, l layout, p place, stored *storedDays) (files []string, err error) {
	if e.table.TimeModel != series.Interval {
		return nil, nil
	}
	var lo time.Time
	recent := ""
	if stored != nil {
		lo, recent = recentFrom(stored.w), recentReadings(stored.w)
	}
	readings := rel(p.out, "readings")
	sel, files, err := inst.hotDays(ctx, e, copies, l, p, lo, recent)
	if err != nil {
		return nil, err
	}
	if sel == "" {
		inst.defineReadings(p)
		sel = dailySQL(l, readings, recent)
	}
	if stored != nil {
		sel = storedDailySQL(l, sel, stored)
	}
	inst.define(`CREATE VIEW ` + database + `.` + rel(p.out, "daily") + ` AS ` + sel)
	return files, nil
}

// hotDays returns the SELECT of daily over p's tiers from lo on (the cold
// tier's readings those where selects, "" all) with
// the hot rows' days summed in PostgreSQL, or "" where the read of p's
// tiers does not allow it: only the current tiers' resolved rows at or
// above W, with no recorded_at ceiling (which may let another version
// win), of a layout that sums days, are what its sums are of. The
// partitions whose copies of e's table copies has are read from those
// files, and the copies it misses are written after the statement.
func (inst *instance) hotDays(ctx context.Context, e *reader, copies *dayCopies, l layout, p place, lo time.Time, where string) (string, []string, error) {
	rd, ok := inst.reads[p.out]
	if !ok || rd.hot == nil || !rd.v.ceiling.IsZero() || rd.v.asOf != nil {
		return "", nil, nil
	}
	fn := inst.nextFunc() + "_days"
	from := later(lo, rd.s.w, rd.s.hasW)
	cols, ok, err := rd.hot.days(fn, from)
	if err != nil || !ok {
		return "", nil, err
	}
	var files, hotFiles []string
	var coldSums string
	more := true // a unit left whose sums fn hands over
	if rd.cold != "" {
		coldSums = dailyPartialSQL(l, `(`+rd.cold+`)`, where)
	}
	if copies != nil && copies.dir != "" && !lo.IsZero() && coldSums != "" {
		// The cold rows from lo on are few, a day's sliver below W, but
		// their files are whole days: a copy of their sums is read in
		// their place.
		f, missed, ok := copies.takeCold(e.table.Name, coldSums)
		if ok {
			coldSums, files = `SELECT * FROM read_parquet(`+quote(f)+`)`, append(files, f)
		} else if missed != nil {
			inst.after = append(inst.after, func() { copies.fill(nil, []dayCopy{*missed}) })
		}
	}
	if dt, is := rd.hot.read.(HotDayTokens); is && copies != nil && copies.dir != "" {
		toks, err := dt.DayTokens(ctx, from)
		if err != nil {
			return "", nil, err
		}
		var units []int
		var missed []dayCopy
		hotFiles, units, missed = copies.take(e.table.Name, cols, toks)
		files = append(files, hotFiles...)
		more = dt.SkipDays(units)
		if len(missed) > 0 {
			src := e.src
			inst.after = append(inst.after, func() { copies.fill(src, missed) })
		}
	}
	if !more && (len(hotFiles) > 0 || coldSums != "") {
		// Copies serve every unit, if any: the statement calls no
		// table function for the day sums (see hotScan.register).
		fn = ""
	}
	return dailySplitSQL(l, coldSums, hotDaysSQL(l, fn, cols, hotFiles)), files, nil
}

// dailyQualities are the quality codes daily counts, one column each.
var dailyQualities = metering.Qualities()

// dailyQualityColumn returns the name of daily's column counting the
// intervals of quality q, such as quality_220.
func dailyQualityColumn(q metering.Quality) string { return "quality_" + strings.ToLower(q.String()) }

// dailySQL returns the SELECT of the relation daily over the resolved
// readings of the relation readings; see the comment at the top of this
// file, of the readings where selects ("": all).
func dailySQL(l layout, readings, where string) string {
	return dailyOuterSQL(l, dailyPartialSQL(l, database+`.`+readings, where))
}

// dailyGroup returns what daily groups by: the series, its day, sparte,
// resolution and unit.
func dailyGroup(l layout) string {
	var keys []string
	for _, k := range l.key {
		if k != "from" {
			keys = append(keys, ident(k))
		}
	}
	return strings.Join(keys, ", ") + `, balancing_day, sparte, resolution, unit`
}

// dailyPartialSQL returns daily's sums of the readings of from (a
// relation or a subquery) that where selects ("": all), grouped by
// dailyGroup.
func dailyPartialSQL(l layout, from, where string) string {
	group := dailyGroup(l)
	aggs := []string{
		`count(*) AS present`,
		`count(*) FILTER (WHERE "from" >= day_from AND "from" < day_to AND CASE resolution WHEN 'P1D' THEN "from" = day_from
			ELSE (epoch_us("from") - epoch_us(day_from)) % (` + resolutionStep() + `) = 0 END) AS on_grid`,
		`CAST(sum(value) AS DECIMAL(38,6)) AS value_sum`,
	}
	for _, q := range dailyQualities {
		aggs = append(aggs, `count(*) FILTER (WHERE quality = `+quote(q.String())+`) AS `+ident(dailyQualityColumn(q)))
	}
	aggs = append(aggs, `max(version) AS max_version`, `max(recorded_at) AS max_recorded_at`)
	if where != "" {
		where = ` WHERE ` + where
	}
	return `SELECT ` + group + `, ` + strings.Join(aggs, ", ") + `
	FROM ` + from + ` JOIN (
		-- Where each day of the readings begins and ends, computed once a day.
		SELECT balancing_day, sparte, meter_balancing_day_start(balancing_day, sparte) AS day_from,
			meter_balancing_day_end(balancing_day, sparte) AS day_to
		FROM (SELECT DISTINCT balancing_day, sparte FROM ` + from + where + `)
	) USING (balancing_day, sparte)` + where + `
	GROUP BY ` + group
}

// dailyOuterSQL returns daily's rows from the sums of inner
// (dailyPartialSQL's columns), with where each day begins and ends and
// the intervals it expects.
func dailyOuterSQL(l layout, inner string) string {
	var counted []string
	for _, r := range countedResolutions {
		counted = append(counted, quote(r.String()))
	}
	var qcols []string
	for _, q := range dailyQualities {
		qcols = append(qcols, ident(dailyQualityColumn(q)))
	}
	return `SELECT ` + dailyGroup(l) + `,
	meter_balancing_day_start(balancing_day, sparte) AS "from",
	meter_balancing_day_end(balancing_day, sparte) AS "to",
	CAST(CASE WHEN resolution IN (` + strings.Join(counted, ", ") + `) THEN meter_expected_intervals(balancing_day, resolution, sparte) END AS BIGINT) AS expected,
	present, on_grid, value_sum, ` + strings.Join(qcols, ", ") + `, max_version, max_recorded_at
FROM (` + inner + `)`
}

// dailySplitSQL returns the SELECT of daily over the day sums of the
// cold tier's resolved rows, in the SELECT coldSums ("": none;
// dailyPartialSQL's columns), and those the hot tier computed of its
// rows, in the SELECT hotDays ("": none; not both): a day's partial sums
// on both sides of W add up. Read apart from readings, the cold rows
// leave the hot tier's rows unread, which a filter on readings would not.
func dailySplitSQL(l layout, coldSums, hotDays string) string {
	group := dailyGroup(l)
	var parts []string
	for _, x := range []string{coldSums, hotDays} {
		if x != "" {
			parts = append(parts, x)
		}
	}
	sums := []string{`CAST(sum(present) AS BIGINT) AS present`, `CAST(sum(on_grid) AS BIGINT) AS on_grid`,
		`CAST(sum(value_sum) AS DECIMAL(38,6)) AS value_sum`}
	for _, q := range dailyQualities {
		c := ident(dailyQualityColumn(q))
		sums = append(sums, `CAST(sum(`+c+`) AS BIGINT) AS `+c)
	}
	sums = append(sums, `max(max_version) AS max_version`, `max(max_recorded_at) AS max_recorded_at`)
	return dailyOuterSQL(l, `SELECT `+group+`, `+strings.Join(sums, ", ")+`
	FROM (`+strings.Join(parts, "\nUNION ALL BY NAME\n")+`)
	GROUP BY `+group)
}

// hotDaysSQL returns the SELECT of the hot tier's day sums from table
// function fn ("": none) with columns cols and the copies files of such
// sums (see hotdays.go), as daily's sums and in their types.
func hotDaysSQL(l layout, fn string, cols []HotColumn, files []string) string {
	types := map[string]string{}
	for _, c := range l.cols {
		types[c.name] = c.typ
	}
	text := slices.ContainsFunc(cols, func(c HotColumn) bool { return c.Name == "value_sum_text" })
	var sel []string
	for _, c := range cols {
		x := hotValue(ident(c.Name), c.Kind)
		switch {
		case c.Name == "value_sum_text":
			continue
		case c.Name == "value_sum":
			// A sum too large for the fixed-width column crosses as text.
			x = `CAST(` + x + ` AS DECIMAL(38,6))`
			if text {
				x = `coalesce(` + x + `, CAST(value_sum_text AS DECIMAL(38,6)))`
			}
		case types[c.Name] != "":
			x = `CAST(` + x + ` AS ` + types[c.Name] + `)`
		}
		sel = append(sel, x+` AS `+ident(c.Name))
	}
	var from []string
	if fn != "" {
		from = append(from, `SELECT * FROM `+fn+`()`)
	}
	if len(files) > 0 {
		quoted := make([]string, len(files))
		for i, f := range files {
			quoted[i] = quote(f)
		}
		from = append(from, `SELECT * FROM read_parquet([`+strings.Join(quoted, ", ")+`])`)
	}
	if len(from) == 0 {
		return ``
	}
	return `SELECT ` + strings.Join(sel, ", ") + ` FROM (` + strings.Join(from, " UNION ALL BY NAME ") + `)`
}

// dailyColumns returns daily's columns, each cast to its type.
func dailyColumns(l layout) []string {
	types := map[string]string{}
	for _, c := range l.cols {
		types[c.name] = c.typ
	}
	var out []string
	for _, k := range l.key {
		if k != "from" {
			out = append(out, `CAST(`+ident(k)+` AS `+types[k]+`) AS `+ident(k))
		}
	}
	out = append(out, `CAST(balancing_day AS DATE) AS balancing_day`, `CAST(sparte AS VARCHAR) AS sparte`,
		`CAST(resolution AS VARCHAR) AS resolution`, `CAST(unit AS VARCHAR) AS unit`,
		`CAST("from" AS TIMESTAMPTZ) AS "from"`, `CAST("to" AS TIMESTAMPTZ) AS "to"`,
		`CAST(expected AS BIGINT) AS expected`, `CAST(present AS BIGINT) AS present`, `CAST(on_grid AS BIGINT) AS on_grid`,
		`CAST(value_sum AS DECIMAL(38,6)) AS value_sum`)
	for _, q := range dailyQualities {
		out = append(out, `CAST(`+ident(dailyQualityColumn(q))+` AS BIGINT) AS `+ident(dailyQualityColumn(q)))
	}
	return append(out, `CAST(max_version AS DECIMAL(20,0)) AS max_version`, `CAST(max_recorded_at AS TIMESTAMPTZ) AS max_recorded_at`)
}

// storedDailySQL returns the SELECT of daily with the days that end at or
// before stored.w from the rollup's files, of each series' day the rows of
// its highest rollup_version, and the later days from recent, the SELECT
// of daily over the readings from recentFrom(w) on.
//
// The rollup's rows are resolved as archival appends them: nearly all at
// the lowest rollup_version, a few days corrected by higher ones. The rows
// of the lowest version win unless their day has a higher one, which an
// anti join on equalities finds; only the higher versions' rows are
// ranked by a window. A window over every row sorts them all, ten times
// the cost of reading them (0.5 to 0.9 s for 410,000 rows, measured).
// Where the files' metrics give their versions, the lowest is a constant
// the scans prune row groups by, and with no version above it the rows
// are read as they are, with no join.
func storedDailySQL(l layout, recent string, stored *storedDays) string {
	cols := strings.Join(dailyColumns(l), ", ")
	var keys, on []string
	for _, k := range l.key {
		if k == "from" {
			continue
		}
		keys = append(keys, ident(k))
		// An identity column a file predates is NULL in its rows.
		op := ` IS NOT DISTINCT FROM `
		if k == "malo_id" || k == "obis_code" {
			op = ` = `
		}
		on = append(on, `f.`+ident(k)+op+`h.`+ident(k))
	}
	keys = append(keys, "balancing_day")
	on = append(on, `f.balancing_day = h.balancing_day`)
	w := timestamptz(stored.w)
	recent = `SELECT ` + cols + ` FROM (` + recent + `) WHERE ` + recentDays(stored.w)
	if len(stored.files) == 0 {
		return recent
	}
	files := readRollup(stored.files)
	lowest, higher := rollupVersions(stored)
	settled := `SELECT * FROM ` + files + ` WHERE "to" <= ` + w
	if !higher {
		return `SELECT ` + cols + ` FROM (` + settled + `)
UNION ALL
` + recent
	}
	return `SELECT ` + cols + ` FROM (` + settled + ` AND rollup_version = ` + lowest + `) f
	ANTI JOIN (SELECT DISTINCT ` + strings.Join(keys, ", ") + ` FROM ` + files + ` WHERE rollup_version > ` + lowest + `) h ON ` + strings.Join(on, " AND ") + `
UNION ALL
SELECT ` + cols + ` FROM (` + settled + ` AND rollup_version > ` + lowest + `
	QUALIFY rollup_version = max(rollup_version) OVER (PARTITION BY ` + strings.Join(keys, ", ") + `))
UNION ALL
` + recent
}

// rollupVersions returns the lowest rollup version of stored's files (a
// SQL expression) and whether a row may have a higher one: by the files'
// metrics where each has them, a constant that lets the scans skip the
// row groups of other versions, otherwise the files' minimum.
func rollupVersions(stored *storedDays) (lowest string, higher bool) {
	known := len(stored.versions) == len(stored.files)
	var lo, hi int64
	for i, r := range stored.versions {
		known = known && r.Known
		if i == 0 || r.Lo < lo {
			lo = r.Lo
		}
		if i == 0 || r.Hi > hi {
			hi = r.Hi
		}
	}
	if !known {
		return `(SELECT min(rollup_version) FROM ` + readRollup(stored.files) + `)`, true
	}
	return strconv.FormatInt(lo, 10), hi > lo
}

// readRollup returns the relation of the rollup's rows in files.
func readRollup(files []string) string {
	quoted := make([]string, len(files))
	for i, f := range files {
		quoted[i] = quote(f)
	}
	return `read_parquet([` + strings.Join(quoted, ", ") + `], union_by_name = true, hive_partitioning = false)`
}

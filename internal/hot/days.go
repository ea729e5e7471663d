package hot

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// Day sums.
//
// The relation daily of the query engine is GROUP BY over the resolved
// readings; for the days above W the hot tier computes that GROUP BY
// itself, in the read's snapshot, so that a row a series and day crosses
// instead of the day's 96 readings. A partition's readings are resolved
// as a winners Scan resolves them, the newest version of each merge key,
// by a backward scan of the primary key (series, from, version); a day
// that straddles two partitions, or W, comes as two partial rows whose
// counts and sums add and whose maxima combine, which the engine does.

// DayColumns returns the columns of the day sums of t's readings (see
// Read.ScanDays), in their order: the series (malo_id, obis_code, the
// identity columns), balancing_day, sparte, resolution and unit; then
// present, on_grid (see onGrid), value_sum and value_sum_text (the exact
// sum: at scale 6 where it fits numeric(18,6), else as text, the other
// one NULL), quality_<code> per quality code, max_version and
// max_recorded_at.
func DayColumns(t *series.Table) []Column {
	cols := []Column{{"malo_id", KindText}, {"obis_code", KindText}}
	for _, c := range t.Identity() {
		cols = append(cols, Column{c.Name, extraKind(c)})
	}
	cols = append(cols, Column{"balancing_day", KindDate}, Column{"sparte", KindText}, Column{"resolution", KindText},
		Column{"unit", KindText}, Column{"present", KindInt64}, Column{"on_grid", KindInt64},
		Column{"value_sum", KindDecimal}, Column{"value_sum_text", KindText})
	for _, q := range metering.Qualities() {
		cols = append(cols, Column{dayQualityColumn(q), KindInt64})
	}
	return append(cols, Column{"max_version", KindUint64}, Column{"max_recorded_at", KindTime})
}

// dayQualityColumn is the name the query engine's relation daily gives
// the count of quality q.
func dayQualityColumn(q metering.Quality) string { return "quality_" + strings.ToLower(q.String()) }

// DayColumns returns the columns of the read's day sums (see DayColumns
// and ScanDays), nil if its layout sums none.
func (r *Read) DayColumns() []Column {
	if r.lay.daySums(r.s.h, r.t, "r", nil) == "" {
		return nil
	}
	return DayColumns(r.t)
}

// ScanDays opens a cursor over the day sums (DayColumns; cols picks and
// orders them) of the resolved readings of partition unit (see Units)
// from lo on, within the read's range.
//
// Where the snapshot has the partition's sums stored, for all its rows
// the read takes and no series of it dirty, two statements read those of
// every such partition, each of half of them (see cleanHalf): the first
// unit of each half has their rows, the others' none. A statement a
// partition planned, scanned the series dictionary and checked the dirty
// log once a partition, for what one scan of the stored sums gives.
func (r *Read) ScanDays(ctx context.Context, unit int, lo time.Time, cols []int) (*Cursor, error) {
	const op = "read"
	if unit < 0 || unit >= len(r.parts) {
		return nil, &series.Error{Kind: series.InvalidInput, Op: op, Table: r.t.Name, Err: fmt.Errorf("no unit %d of the day sums", unit)}
	}
	all := DayColumns(r.t)
	c := r.newCursor(len(cols))
	list := make([]string, len(cols))
	for i, col := range cols {
		if col < 0 || col >= len(all) {
			return nil, &series.Error{Kind: series.InvalidInput, Op: op, Table: r.t.Name, Err: fmt.Errorf("no column %d of the day sums", col)}
		}
		c.kinds[i], list[i] = all[col].Kind, `d.`+quote(all[col].Name)
	}
	p := r.parts[unit]
	stored, err := r.daysStored(ctx)
	if err != nil {
		return nil, classify(op, r.t.Name, err)
	}
	var sel string
	switch clean := r.cleanDays(stored, lo); {
	case r.skipped(unit):
		c.cur = &fetched{last: true}
		return c, nil
	case slices.Contains(clean, unit):
		half := cleanHalf(clean, unit)
		if half == nil {
			// The first unit of its half has this one's sums.
			c.cur = &fetched{last: true}
			return c, nil
		}
		if unit != clean[0] && r.days.joined != nil {
			// On a connection of its own, which daysStored asked for:
			// on the first one's, the halves would take turns.
			select {
			case <-r.days.joined:
			case <-ctx.Done():
				return nil, classify(op, r.t.Name, context.Cause(ctx))
			}
		}
		sel = r.storedDays(half)
	default:
		rel := r.s.h.ident(p.Name)
		var sums string
		if stored && len(r.rangeWhere(p, lo)) == 0 {
			sums = r.s.h.storedDaySums(r.t, r.lay, rel, p, r.lay.keyFilter(r.s.h, r.t, p, r.keys()))
		} else {
			sums = r.lay.daySums(r.s.h, r.t, rel, r.partWhere(p, lo))
		}
		if sums == "" {
			return nil, &series.Error{Kind: series.InvalidInput, Op: op, Table: r.t.Name, Err: fmt.Errorf("the %s layout sums no days", r.lay)}
		}
		sel = dayNamed(r.s.h, r.t, []Partition{p}, sums)
	}
	return r.open(ctx, c, `SELECT `+strings.Join(list, ", ")+` FROM (`+sel+`) d`)
}

// cleanHalf returns the clean units (see cleanDays) whose stored sums
// unit's statement reads: the first or the second half of them if unit
// begins it, else none. Two statements, not one a unit, so that two of
// the engine's threads and two PostgreSQL backends share the rows, and
// not more: each statement plans its partitions and scans the dirty log
// and the series dictionary once.
func cleanHalf(clean []int, unit int) []int {
	n := (len(clean) + 1) / 2
	switch {
	case unit == clean[0]:
		return clean[:n]
	case n < len(clean) && unit == clean[n]:
		return clean[n:]
	}
	return nil
}

// cleanDays returns the units whose day sums are all stored in the
// read's snapshot (stored says it has the aggregate): those the read
// takes whole from lo on and whose partition the dirty log names no
// series of.
func (r *Read) cleanDays(stored bool, lo time.Time) []int {
	if !stored {
		return nil
	}
	var units []int
	for u, p := range r.parts {
		if !r.days.dirty[u] && !r.skipped(u) && len(r.rangeWhere(p, lo)) == 0 {
			units = append(units, u)
		}
	}
	return units
}

// storedDays returns the SELECT of the day sums (DayColumns) of the units
// clean (see cleanDays) as stored, each for the keys of the read's range.
func (r *Read) storedDays(clean []int) string {
	h := r.s.h
	parts := make([]Partition, len(clean))
	conds := make([]string, len(clean))
	for i, u := range clean {
		parts[i] = r.parts[u]
		conds[i] = `(` + strings.Join(append([]string{bucketIn("", parts[i])}, r.lay.keyFilter(h, r.t, parts[i], r.keys())...), " AND ") + `)`
	}
	core := `SELECT ` + strings.Join(dayStored(), ", ") + ` FROM ` + h.ident(daysName(r.t)) + ` WHERE ` + strings.Join(conds, " OR ")
	return dayNamed(h, r.t, parts, core)
}

// dictDaySums returns the SELECT of the day sums of the resolved rows of
// relation rel of t in a dictionary layout, those where selects, by
// series id (dayStored's columns; dayNamed names their series). onRows names what the rows hold of quality, balancing_day and
// recorded_at (the rest is the attrs dictionary's), version the
// expression of a version from the rows' max(version) mv; l says how the
// rows store their start.
func dictDaySums(h *Tier, t *series.Table, l layout, rel string, where []string, onRows map[string]bool, version func(mv string) string) string {
	from := l.fromColumn()
	held := []string{"series", from, "attr", "value", "version"}
	var byRow []string
	for _, c := range []string{"quality", "balancing_day", "recorded_at"} {
		if onRows[c] {
			held = append(held, c)
			if c != "recorded_at" {
				byRow = append(byRow, "w."+c)
			}
		}
	}
	cond := ""
	if len(where) > 0 {
		cond = ` WHERE ` + strings.Join(where, " AND ")
	}
	// The newest version of each merge key: the primary key read
	// backwards, first row of each (series, from).
	resolved := `SELECT DISTINCT ON (series, ` + from + `) ` + strings.Join(held, ", ") + ` FROM ` + rel + cond +
		` ORDER BY series DESC, ` + from + ` DESC, version DESC`
	// of returns the source of column c of table alias row: the rows or
	// the attrs.
	of := func(row, c string) string {
		if onRows[c] {
			return row + "." + c
		}
		return "a." + c
	}
	// The attrs give each row its sparte and resolution, which its grid
	// depends on, before the rows are grouped.
	group := append([]string{"w.series", "w.attr"}, byRow...)
	grid := onGrid(l.fromTime(t, `w.`+from), of("w", "balancing_day"), "a.sparte", "a.resolution")
	attrs := h.ident(attrsName(t))
	if !onRows["balancing_day"] {
		// The attrs hold the day: its bounds are found once an attr, not
		// once a reading.
		attrs = `(SELECT a.id, a.resolution, ` + balancingDayStart("a.balancing_day", "a.sparte") + ` AS day_from, ` +
			balancingDayStart("(a.balancing_day + 1)", "a.sparte") + ` AS day_to FROM ` + attrs + ` a OFFSET 0)`
		grid = onGridWithin(l.fromTime(t, `w.`+from), "a.day_from", "a.day_to", "a.resolution")
	}
	aggs := []string{"count(*) AS n", `count(*) FILTER (WHERE ` + grid + `) AS og`,
		"sum(w.value) AS v", "max(w.version) AS mv"}
	if onRows["recorded_at"] {
		aggs = append(aggs, "max(w.recorded_at) AS mr")
	}
	g := `SELECT ` + strings.Join(append(slices.Clone(group), aggs...), ", ") + ` FROM (` + resolved + `) w JOIN ` +
		attrs + ` a ON a.id = w.attr GROUP BY ` + strings.Join(group, ", ")
	recorded := "max(a.recorded_at)"
	if onRows["recorded_at"] {
		recorded = "max(g.mr)"
	}
	day := of("g", "balancing_day")
	sel := []string{`g.series AS series`, day + ` AS balancing_day`, `a.sparte::text AS sparte`, `a.resolution::text AS resolution`, `a.unit::text AS unit`,
		`sum(g.n)::int8 AS present`, `sum(g.og)::int8 AS on_grid`, `sum(g.v) AS value_sum`}
	for _, q := range metering.Qualities() {
		sel = append(sel, `coalesce(sum(g.n) FILTER (WHERE `+of("g", "quality")+` = `+lit(q.String())+`), 0)::int8 AS `+quote(dayQualityColumn(q)))
	}
	sel = append(sel, version("max(g.mv)")+` AS max_version`, recorded+` AS max_recorded_at`)
	return `SELECT ` + strings.Join(sel, ", ") + ` FROM (` + g + `) g JOIN ` +
		h.ident(attrsName(t)) + ` a ON a.id = g.attr GROUP BY g.series, ` + day + `, a.sparte, a.resolution, a.unit`
}

// dayStored returns the columns of a day sum by series id (see
// dictDaySums), as the aggregate of days stores them after its bucket.
func dayStored() []string {
	cols := []string{"series", "balancing_day", "sparte", "resolution", "unit", "present", "on_grid", "value_sum"}
	for _, q := range metering.Qualities() {
		cols = append(cols, quote(dayQualityColumn(q)))
	}
	return append(cols, "max_version", "max_recorded_at")
}

// dayNamed returns the SELECT of the day sums (DayColumns) of the day
// sums by series id of partitions parts that the SELECT core gives: the
// series id is the series dictionary's primary key, its row's columns
// follow from it. A row's id names a dictionary row of its own bucket
// (the check refuses others), so the join reads only the parts' buckets
// of the dictionary, which holds every hot bucket's series.
func dayNamed(h *Tier, t *series.Table, parts []Partition, core string) string {
	sel := []string{"s.malo_id::text AS malo_id", "s.obis_code::text AS obis_code"}
	for _, c := range t.Identity() {
		typ := "text"
		if extraKind(c) == KindInt64 {
			typ = "int8"
		}
		sel = append(sel, `s.`+quote(c.Name)+`::`+typ+` AS `+quote(c.Name))
	}
	for _, c := range dayStored()[1:] {
		if c == "value_sum" {
			// A sum of numeric(18,6) values crosses as one, 8 bytes
			// decoded without text, while it fits; else as text.
			fits := `abs(c.value_sum) < 1e12 AND c.value_sum = trunc(c.value_sum, 6)`
			sel = append(sel, `CASE WHEN `+fits+` THEN c.value_sum END AS value_sum`,
				`CASE WHEN NOT (`+fits+`) THEN c.value_sum::text END AS value_sum_text`)
			continue
		}
		sel = append(sel, `c.`+c)
	}
	in := make([]string, len(parts))
	for i, p := range parts {
		in[i] = `(` + bucketIn("s.", p) + `)`
	}
	return `SELECT ` + strings.Join(sel, ", ") + ` FROM (` + core + `) c JOIN ` + h.ident(seriesName(t)) + ` s ON s.id = c.series AND (` + strings.Join(in, " OR ") + `)`
}

// daysStored reports whether the read's snapshot has t's aggregate of
// days, which a table declared by an older version gets at its next
// ensure, and notes which of the read's partitions its dirty log names a
// series of, in the snapshot. The first call folds the dirty log of the
// read's partitions into the aggregate first (refreshDays), for the reads
// after this one: this one's snapshot is taken, and exact either way. A
// refresh that fails is logged, not the read's error.
func (r *Read) daysStored(ctx context.Context) (bool, error) {
	r.days.once.Do(func() {
		if !sumsDays(r.lay) {
			return
		}
		h := r.s.h
		if len(r.parts) > 1 {
			// The second statement of the clean sums (cleanHalf) needs a
			// connection of its own: it joins while this one checks. It
			// is waited for only where the pool has one to give, so that
			// a read never waits for another to end.
			st := h.pool.Stat()
			free := st.IdleConns() > 0 || st.TotalConns() < st.MaxConns()
			if joined := r.s.acquire(); free {
				r.days.joined = joined
			}
		}
		folded, err := h.refreshDays(ctx, r.t, r.lay, r.parts)
		if err != nil {
			h.log.Warn("hot: day sums not refreshed", "table", r.t.Name, "err", err)
		}
		if folded {
			r.s.vacuumAfter(h.ident(dirtyName(r.t)))
		}
		res, err := r.snapshotRow(ctx, `SELECT count(*) FILTER (WHERE c.relname <> `+lit(dayTokensName(r.t))+`) = 2, count(*) FILTER (WHERE c.relname = `+
			lit(dayTokensName(r.t))+`) = 1 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = `+
			lit(h.schema)+` AND c.relname IN (`+lit(daysName(r.t))+`, `+lit(dirtyName(r.t))+`, `+lit(dayTokensName(r.t))+`)`)
		if err != nil || string(res[0]) != "t" || len(r.parts) == 0 {
			r.days.err = err
			return
		}
		// One probe of the log's index a partition, and of the tokens'
		// where a copy of whole partitions' sums could serve the read.
		tokens := string(res[1]) == "t" && len(r.keys()) == 0
		probes := make([]string, 0, 2*len(r.parts))
		for _, p := range r.parts {
			probes = append(probes, `EXISTS (SELECT 1 FROM `+h.ident(dirtyName(r.t))+` WHERE `+bucketIn("", p)+`)`)
		}
		if tokens {
			for _, p := range r.parts {
				probes = append(probes, `(SELECT token::text FROM `+h.ident(dayTokensName(r.t))+` WHERE bucket = `+timeLit(p.From)+`)`)
			}
		}
		if res, err = r.snapshotRow(ctx, `SELECT `+strings.Join(probes, ", ")); err != nil {
			r.days.err = err
			return
		}
		n := len(r.parts)
		r.days.dirty = make([]bool, n)
		r.days.tokens = make([]string, n)
		for i, v := range res[:n] {
			r.days.dirty[i] = string(v) != "f"
		}
		if tokens {
			for i, v := range res[n:] {
				r.days.tokens[i] = string(v)
			}
		}
		r.days.ok = true
	})
	return r.days.ok, r.days.err
}

// snapshotRow returns the one row, in text, of the statement sql run on
// the snapshot's first connection.
func (r *Read) snapshotRow(ctx context.Context, sql string) ([][]byte, error) {
	r.s.mu.Lock()
	holder := r.s.conns[0]
	r.s.mu.Unlock()
	holder.mu.Lock()
	defer holder.mu.Unlock()
	res, err := holder.c.Conn().PgConn().Exec(ctx, sql).ReadAll()
	switch {
	case err != nil:
		return nil, err
	case len(res) != 1 || len(res[0].Rows) != 1:
		return nil, fmt.Errorf("%d results, want one row", len(res))
	}
	return res[0].Rows[0], nil
}

// daySums: the dictionary layout's rows hold quality, balancing day and
// recorded_at, and the version as numeric.
func (l dictLayout) daySums(h *Tier, t *series.Table, rel string, where []string) string {
	return dictDaySums(h, t, l, rel, where, map[string]bool{"quality": true, "balancing_day": true, "recorded_at": true},
		func(mv string) string { return mv + `::numeric` })
}

// daySums: the lean layout's attrs hold quality, balancing day and
// recorded_at, and the rows the version biased.
func (l leanLayout) daySums(h *Tier, t *series.Table, rel string, where []string) string {
	return dictDaySums(h, t, l, rel, where, nil, leanDayVersion)
}

// leanDayVersion returns the version of the lean layouts' biased
// max(version) mv.
func leanDayVersion(mv string) string { return `(` + mv + `::numeric + ` + versionBias + `)` }

// daySums: the step layout's are the lean layout's, over the stored step.
func (l stepLayout) daySums(h *Tier, t *series.Table, rel string, where []string) string {
	return dictDaySums(h, t, l, rel, where, nil, leanDayVersion)
}

// daySums: none; the engine sums the rows layout's readings itself.
func (rowsLayout) daySums(*Tier, *series.Table, string, []string) string { return "" }

// onGrid returns the condition that the reading from, of balancing day
// day, sparte and resolution res (SQL expressions), lies on its
// resolution's grid within its day, as the query engine's relation daily
// counts on_grid: a fixed resolution's steps from where the day begins,
// P1D at its start, never a coarser one. date_bin keeps clear of numeric
// arithmetic on epochs.
func onGrid(from, day, sparte, res string) string {
	return onGridWithin(from, balancingDayStart(day, sparte), balancingDayStart(`(`+day+` + 1)`, sparte), res)
}

// onGridWithin is onGrid of a day from start to end (SQL expressions).
func onGridWithin(from, start, end, res string) string {
	var when []string
	for r := metering.Resolution(1); r.Valid(); r++ {
		if step, ok := r.Fixed(); ok {
			when = append(when, fmt.Sprintf(`WHEN %s THEN date_bin(interval '%d seconds', %s, %s) = %s`, lit(r.String()), int64(step.Seconds()), from, start, from))
		}
	}
	when = append(when, `WHEN `+lit(metering.Day.String())+` THEN `+from+` = `+start)
	return `(` + from + ` >= ` + start + ` AND ` + from + ` < ` + end +
		` AND CASE ` + res + ` ` + strings.Join(when, " ") + ` ELSE false END)`
}

// balancingDayStart returns the timestamptz at which balancing day day (a
// date) of sparte begins: Berlin midnight, 06:00 for gas; neither hour is
// ever skipped or repeated by a clock change.
func balancingDayStart(day, sparte string) string {
	return `((` + day + ` + CASE WHEN ` + sparte + ` = 'GAS' THEN time '06:00' ELSE time '00:00' END) AT TIME ZONE 'Europe/Berlin')`
}

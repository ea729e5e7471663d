// Package rollup defines the daily rollup of an interval table: per series
// and balancing day, what GROUP BY over the resolved readings gives (the
// relation daily of the query package). The cold tier stores it for
// settled days in an Iceberg table of its own, written as appends of
// higher rollup versions, never rewritten; this package holds its schema,
// its name, and the one Go computation of its rows, which the writer and
// the tests share.
package rollup

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// Namespace returns the Iceberg namespace of the rollups of the tables of
// namespace ns: ns_daily. Each rollup has its table's name there, so that
// it clashes with no declared table, which all live in ns.
func Namespace(ns string) string { return ns + "_daily" }

// A Row is one row of the rollup: a series' intervals of one balancing day
// of one sparte, resolution and unit (normally the day's only row).
type Row struct {
	MaLo, OBIS string
	Identity   []string // the identity columns' values, in declared order
	Day        metering.Date
	Commodity  metering.Commodity
	Resolution metering.Resolution
	Unit       metering.Unit
	// Expected is the intervals the calendar expects of the day; -1 for a
	// resolution coarser than a day.
	Expected int64
	Present  int64
	// OnGrid is how many of them lie on the resolution's grid within the
	// day (the one at the day's start for P1D), what completeness counts
	// as present; 0 for a resolution coarser than a day.
	OnGrid     int64
	Sum        int64   // millionths, as series.Decimal; the sum of a day fits
	Qualities  []int64 // per metering.Qualities(), in order
	MaxVersion uint64
	MaxRecord  time.Time
	// Version is the rollup version that wrote the row: the highest
	// version of a series' day holds its rows.
	Version int64
}

// A Key names a series' day, the unit of a rollup rewrite: every row of
// a key is written again together.
type Key struct {
	MaLo, OBIS, Identity string // Identity: the values joined by a NUL
	Day                  metering.Date
}

// KeyOf returns the key of r.
func (r *Row) KeyOf() Key {
	return Key{r.MaLo, r.OBIS, strings.Join(r.Identity, "\x00"), r.Day}
}

// A Builder computes rollup rows from readings given in any order, every
// version of a merge key included: it keeps the winner of each (the
// highest version, then the latest recorded_at) in a compact form.
type Builder struct {
	decl *series.Table
	cal  *metering.Calendar
	best map[mergeKey]winner
}

type mergeKey struct {
	malo, obis, identity string
	from                 int64
}

// A winner is what a rollup row needs of a merge key's winning version.
// It holds no pointer, so that keeping the next one costs no write
// barrier while the collector runs, as it mostly does in an archival.
type winner struct {
	version  uint64
	recorded int64 // µs, as stored
	value    series.Decimal
	quality  metering.Quality
	day      metering.Date
	com      metering.Commodity
	res      metering.Resolution
	unit     metering.Unit
	from     int64 // µs, as the merge key
}

// Needs returns whether the Builder needs column name of decl's readings:
// the series, the day and what the rollup counts, not the rest.
func Needs(decl *series.Table) func(name string) bool {
	return func(name string) bool {
		switch name {
		case "malo_id", "obis_code", "sparte", "from", "value", "unit", "quality", "resolution", "version", "recorded_at", "balancing_day":
			return true
		}
		for _, c := range decl.Columns {
			if c.Identity && c.Name == name {
				return true
			}
		}
		return false
	}
}

// NewBuilder returns a Builder for readings of the interval table decl.
func NewBuilder(decl *series.Table, cal *metering.Calendar) *Builder {
	return &Builder{decl: decl, cal: cal, best: map[mergeKey]winner{}}
}

// Add adds a version of a reading.
func (b *Builder) Add(r *series.Reading) {
	k := keyOf(b.decl, r)
	if w, ok := b.best[k]; ok && !beats(r, w) {
		return
	}
	b.best[k] = winnerOf(b.decl, r)
}

func keyOf(decl *series.Table, r *series.Reading) mergeKey {
	return mergeKey{r.MaLo, r.OBIS, strings.Join(identity(decl, r), "\x00"), r.From.UnixMicro()}
}

// beats reports whether r wins over w, a version of its merge key: the
// higher version, then the later recorded_at.
func beats(r *series.Reading, w winner) bool {
	return r.Version > w.version || r.Version == w.version && r.RecordedAt.UnixMicro() > w.recorded
}

func winnerOf(decl *series.Table, r *series.Reading) winner {
	return winner{r.Version, r.RecordedAt.UnixMicro(), r.Value, r.Quality, r.BalancingDay, cmp.Or(r.Commodity, decl.Commodity), r.Resolution, r.Unit, r.From.UnixMicro()}
}

func identity(decl *series.Table, r *series.Reading) []string {
	var out []string
	for _, c := range decl.Columns {
		if c.Identity {
			out = append(out, r.Extra[c.Name])
		}
	}
	return out
}

// Compute returns the rollup rows, of rollup version v, of readings of
// the interval table decl, every version included.
func Compute(decl *series.Table, cal *metering.Calendar, readings []series.Reading, v int64) []Row {
	b := NewBuilder(decl, cal)
	for i := range readings {
		b.Add(&readings[i])
	}
	return b.Rows(v)
}

// Rows returns the rollup rows, of rollup version v, of the winners added
// so far, in key order.
func (b *Builder) Rows(v int64) []Row {
	d := newDays(b.decl, b.cal)
	for k, w := range b.best {
		d.add(k, &w)
	}
	return d.rows(v)
}

// A group is a rollup row's key: a series' day of one sparte, resolution
// and unit.
type group struct {
	malo, obis, identity string
	day                  metering.Date
	com                  metering.Commodity
	res                  metering.Resolution
	unit                 metering.Unit
}

// days sums winners into rollup rows.
type days struct {
	decl        *series.Table
	cal         *metering.Calendar
	qs          []metering.Quality
	hasIdentity bool
	// order holds the rows as their groups first came: in key order when
	// the winners came so, as a Stream's do, which spares rows a sort.
	order []grouped
	// groups finds the rows of order[:indexed] by group, once a group
	// came before the one before it. Until then (ascending) order is its
	// own index, searched by halves, and a group after the last is new:
	// a Stream's winners, in key order, and the rows of days it carried,
	// need no map, which an archival's sums would otherwise build a row
	// at a time.
	groups    map[group]*Row
	indexed   int
	ascending bool
	// slab and counts are where new rows and their quality counts are
	// allocated, a slab at a time rather than one each.
	slab   []Row
	counts []int64
	// spans holds where each balancing day of the rows begins and ends,
	// to place their intervals on the grid: the calendar's arithmetic,
	// once a day rather than once a series' day.
	spans map[dayOf]span
}

// A grouped is a row and its group.
type grouped struct {
	g group
	x *Row
}

// A dayOf is a balancing day of one sparte.
type dayOf struct {
	day metering.Date
	com metering.Commodity
}

// A span is where a balancing day begins and ends, in µs, and the step
// of the grid of a resolution within it (0 for none).
type span struct{ from, to, step int64 }

func newDays(decl *series.Table, cal *metering.Calendar) *days {
	return &days{decl: decl, cal: cal, qs: metering.Qualities(), hasIdentity: len(identity(decl, &series.Reading{})) > 0,
		ascending: true, spans: map[dayOf]span{}}
}

// find returns the row of g, nil if there is none yet.
func (d *days) find(g group) *Row {
	if d.ascending {
		if n := len(d.order); n == 0 || compareGroups(d.order[n-1].g, g) < 0 {
			return nil
		}
		i, ok := slices.BinarySearchFunc(d.order, g, func(e grouped, g group) int { return compareGroups(e.g, g) })
		if !ok {
			return nil
		}
		return d.order[i].x
	}
	if d.groups == nil {
		d.groups = make(map[group]*Row, len(d.order))
	}
	for _, e := range d.order[d.indexed:] {
		d.groups[e.g] = e.x
	}
	d.indexed = len(d.order)
	return d.groups[g]
}

// insert adds x, the new row of g, which find did not find.
func (d *days) insert(g group, x *Row) {
	if n := len(d.order); n > 0 && compareGroups(d.order[n-1].g, g) >= 0 {
		d.ascending = false
	}
	d.order = append(d.order, grouped{g, x})
}

// compareGroups orders groups, as find needs: any total order does.
func compareGroups(a, b group) int {
	return cmp.Or(strings.Compare(a.malo, b.malo), strings.Compare(a.obis, b.obis), strings.Compare(a.identity, b.identity),
		a.day.Compare(b.day), cmp.Compare(a.com, b.com), cmp.Compare(a.res, b.res), cmp.Compare(a.unit, b.unit))
}

// newRow returns a new row, zero but for its Qualities, of the slab.
func (d *days) newRow() *Row {
	const n = 256
	if len(d.slab) == cap(d.slab) {
		d.slab = make([]Row, 0, n)
		d.counts = make([]int64, n*len(d.qs))
	}
	d.slab = d.slab[:len(d.slab)+1]
	x := &d.slab[len(d.slab)-1]
	x.Qualities, d.counts = d.counts[:len(d.qs):len(d.qs)], d.counts[len(d.qs):]
	return x
}

// add adds w, the winner of k, and returns its row.
func (d *days) add(k mergeKey, w *winner) *Row {
	g := group{k.malo, k.obis, k.identity, w.day, w.com, w.res, w.unit}
	x := d.find(g)
	if x == nil {
		var id []string
		if k.identity != "" || d.hasIdentity {
			id = d.identity(k.identity)
		}
		x = d.newRow()
		q := x.Qualities
		*x = Row{MaLo: k.malo, OBIS: k.obis, Identity: id, Day: w.day, Commodity: w.com,
			Resolution: w.res, Unit: w.unit, Expected: -1, Qualities: q}
		if n, err := d.cal.IntervalsPerDay(w.day, w.res, w.com); err == nil {
			x.Expected = int64(n)
		}
		d.insert(g, x)
	}
	d.countIn(x, w, d.spanOf(x))
	return x
}

// identity returns the identity columns joined in id, split: the last
// row's if it has them, which the rows of a series' days share.
func (d *days) identity(id string) []string {
	if n := len(d.order); n > 0 && d.order[n-1].g.identity == id {
		return d.order[n-1].x.Identity
	}
	return strings.Split(id, "\x00")
}

// countIn adds w to x, its row, whose day's span is sp.
func (d *days) countIn(x *Row, w *winner, sp span) {
	x.Present++
	if onGrid(w, sp) {
		x.OnGrid++
	}
	x.Sum += int64(w.value)
	if q := slices.Index(d.qs, w.quality); q >= 0 {
		x.Qualities[q]++
	}
	x.MaxVersion = max(x.MaxVersion, w.version)
	if w.recorded > x.MaxRecord.UnixMicro() {
		x.MaxRecord = time.UnixMicro(w.recorded).UTC()
	}
}

// spanOf returns where x's day begins and ends, and the step of its
// resolution's grid.
func (d *days) spanOf(x *Row) span {
	k := dayOf{x.Day, x.Commodity}
	s, ok := d.spans[k]
	if !ok {
		s = span{from: d.cal.BalancingDayStart(x.Day, x.Commodity).UnixMicro(), to: d.cal.BalancingDayEnd(x.Day, x.Commodity).UnixMicro()}
		d.spans[k] = s
	}
	if step, ok := x.Resolution.Fixed(); ok {
		s.step = step.Microseconds()
	}
	return s
}

// onGrid reports whether w's interval lies on its resolution's grid within
// its day s, as completeness counts it present: for P1D, at the day's
// start; for a fixed resolution, a whole number of steps after it.
func onGrid(w *winner, s span) bool {
	if w.from < s.from || w.from >= s.to {
		return false
	}
	if w.res == metering.Day {
		return w.from == s.from
	}
	return s.step > 0 && (w.from-s.from)%s.step == 0
}

// addRow adds the sums of r to its group's.
func (d *days) addRow(r *Row) {
	g := group{r.MaLo, r.OBIS, strings.Join(r.Identity, "\x00"), r.Day, r.Commodity, r.Resolution, r.Unit}
	x := d.find(g)
	if x == nil {
		x = d.newRow()
		q := x.Qualities
		copy(q, r.Qualities)
		*x = *r
		x.Qualities = q
		d.insert(g, x)
		return
	}
	x.Present += r.Present
	x.OnGrid += r.OnGrid
	x.Sum += r.Sum
	for i := range min(len(x.Qualities), len(r.Qualities)) {
		x.Qualities[i] += r.Qualities[i]
	}
	x.MaxVersion = max(x.MaxVersion, r.MaxVersion)
	if r.MaxRecord.After(x.MaxRecord) {
		x.MaxRecord = r.MaxRecord
	}
}

func (d *days) rows(v int64) []Row {
	out := make([]Row, 0, len(d.order))
	for _, e := range d.order {
		r := *e.x
		r.Version = v
		out = append(out, r)
	}
	if !slices.IsSortedFunc(out, compare) {
		slices.SortFunc(out, compare)
	}
	return out
}

func compare(a, b Row) int {
	return cmp.Or(strings.Compare(a.MaLo, b.MaLo), strings.Compare(a.OBIS, b.OBIS),
		slices.Compare(a.Identity, b.Identity), a.Day.Compare(b.Day),
		cmp.Compare(a.Commodity, b.Commodity), cmp.Compare(a.Resolution, b.Resolution), cmp.Compare(a.Unit, b.Unit))
}

// Current returns the rows of rows that hold: of each key, those of its
// highest rollup version, in key order.
func Current(rows []Row) []Row {
	top := map[Key]int64{}
	for i := range rows {
		k := rows[i].KeyOf()
		if v, ok := top[k]; !ok || rows[i].Version > v {
			top[k] = rows[i].Version
		}
	}
	var out []Row
	for _, r := range rows {
		if r.Version == top[r.KeyOf()] {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, compare)
	return out
}

package series

import (
	"cmp"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/meterstore/meterstore/metering"
)

// The earliest and latest instants a reading may start at. A reading of
// 1900 or of year 0 is a producer's error, not history to keep.
var (
	MinFrom = time.Date(1970, time.January, 1, 0, 0, 0, 0, time.UTC)
	MaxFrom = time.Date(9999, time.January, 1, 0, 0, 0, 0, time.UTC)
)

// Derived is what a valid reading implies beyond what it states.
type Derived struct {
	// Commodity is the reading's, or the table's default.
	Commodity metering.Commodity
	// BalancingDay is the Berlin day of From, or the gas day for gas.
	BalancingDay metering.Date
	// Ancestors are the starts of the coarser accepted intervals that
	// contain the reading's interval: the only places where a containing
	// interval of the series can start. Only for Interval tables.
	Ancestors []time.Time
}

// A Checker holds the one definition of a valid reading of a table, which
// both tiers apply: a hot write and a late correction bound for the cold
// tier pass exactly the same checks. Consecutive rows mostly share their
// ids and day, so a Checker remembers the last spellings that passed; it is
// not safe for concurrent use.
type Checker struct {
	t   *Table
	cal *metering.Calendar
	res []metering.Resolution

	lastMaLo, lastMeLo  string
	lastOBIS, lastScope string
	lastMedium          metering.Commodity
	lastMediumOK        bool
	lastDayCom          metering.Commodity
	lastDay, lastDayEnd time.Time // the balancing day of the last row, as an interval
	lastDayDate         metering.Date
}

// NewChecker returns a Checker for readings of t on the calendar cal.
func NewChecker(t *Table, cal *metering.Calendar) *Checker {
	return &Checker{t: t, cal: cal, res: t.AcceptedResolutions()}
}

// Check reports why r is not a valid reading of the table, or nil, and
// fills in d. It checks the reading alone; CheckBatch checks a batch's
// readings against each other.
func (c *Checker) Check(r *Reading, d *Derived) error {
	t := c.t
	*d = Derived{}
	if r.MaLo != c.lastMaLo {
		if _, err := metering.ParseMaLo(r.MaLo); err != nil {
			return fmt.Errorf("malo_id: %w", err)
		}
		c.lastMaLo = r.MaLo
	}
	if r.MeLo != "" && r.MeLo != c.lastMeLo {
		if _, err := metering.ParseMeLo(r.MeLo); err != nil {
			return fmt.Errorf("melo_id: %w", err)
		}
		c.lastMeLo = r.MeLo
	}
	if r.OBIS != c.lastOBIS {
		o, err := metering.ParseOBIS(r.OBIS)
		if err != nil {
			return fmt.Errorf("obis_code: %w", err)
		}
		if !canonicalOBIS(o, r.OBIS) {
			return fmt.Errorf("obis_code %q: not canonical, want %q", r.OBIS, o.String())
		}
		c.lastOBIS = r.OBIS
		c.lastMedium, c.lastMediumOK = o.Medium()
	}
	d.Commodity = r.Commodity
	if d.Commodity == 0 {
		d.Commodity = t.Commodity
	}
	if !d.Commodity.Valid() {
		if r.Commodity == 0 {
			return fmt.Errorf("sparte not set and the table has no default")
		}
		return fmt.Errorf("sparte %d unknown", r.Commodity)
	}
	if c.lastMediumOK && c.lastMedium != d.Commodity {
		return fmt.Errorf("obis_code %s measures %s, the reading is %s", r.OBIS, c.lastMedium, d.Commodity)
	}

	// An unset from is Go's zero time, 0001-01-01, which a delivery may
	// also state: either way it lies outside the range, which says what is
	// wrong with it.
	switch {
	case r.From.Before(MinFrom) || !r.From.Before(MaxFrom):
		return fmt.Errorf("from %s is out of the supported range: want an instant from %s to before %s",
			r.From.UTC().Format(time.RFC3339), MinFrom.Format(time.RFC3339), MaxFrom.Format(time.RFC3339))
	case r.From.Nanosecond()%1000 != 0 || r.To.Nanosecond()%1000 != 0:
		return fmt.Errorf("from or to finer than a microsecond")
	}
	if t.TimeModel == Point {
		if !r.To.IsZero() || r.Resolution != 0 {
			return fmt.Errorf("a point table's readings have no to and no resolution")
		}
	} else if err := c.checkInterval(r, d); err != nil {
		return err
	}

	switch {
	case r.Value > MaxDecimal || r.Value < -MaxDecimal:
		return fmt.Errorf("value %s exceeds numeric(18,6)", r.Value)
	case !r.Unit.Valid():
		return fmt.Errorf("unit not set or unknown")
	case !r.Quality.Valid():
		return fmt.Errorf("quality not set or unknown")
	}
	if r.VersionScope != c.lastScope {
		if !validVersionScope(r.VersionScope) {
			return fmt.Errorf("version_scope %q: want network operator id, colon, balancing month YYYY-MM", r.VersionScope)
		}
		c.lastScope = r.VersionScope
	}
	d.BalancingDay = c.balancingDay(r.From, d.Commodity)
	if len(t.Columns) > 0 || len(r.Extra) > 0 {
		return checkExtra(t, r)
	}
	return nil
}

// balancingDay returns the balancing day of t. Rows of one day come
// together, so the last day is tried first.
func (c *Checker) balancingDay(t time.Time, com metering.Commodity) metering.Date {
	if com == c.lastDayCom && !t.Before(c.lastDay) && t.Before(c.lastDayEnd) {
		return c.lastDayDate
	}
	d := c.cal.BalancingDay(t, com)
	c.lastDayCom, c.lastDayDate = com, d
	c.lastDay, c.lastDayEnd = c.cal.BalancingDayStart(d, com), c.cal.BalancingDayEnd(d, com)
	return d
}

// checkInterval checks that the interval lies on the grid of its
// resolution, which makes two intervals of a series either nested or
// disjoint, and finds the intervals of coarser resolutions that contain it.
func (c *Checker) checkInterval(r *Reading, d *Derived) error {
	if r.Resolution == 0 || !slices.Contains(c.res, r.Resolution) {
		return fmt.Errorf("resolution %v not accepted by the table", r.Resolution)
	}
	from, to := r.From.UTC(), r.To.UTC()
	if start := c.Align(from, r.Resolution, d.Commodity); !start.Equal(from) {
		return fmt.Errorf("from %s is not on the %s grid (nearest start before it: %s)",
			from.Format(time.RFC3339Nano), r.Resolution, start.Format(time.RFC3339))
	}
	if want := c.cal.Next(from, r.Resolution); !to.Equal(want) {
		return fmt.Errorf("to %s: a %s interval from %s ends at %s",
			to.Format(time.RFC3339Nano), r.Resolution, from.Format(time.RFC3339), want.Format(time.RFC3339))
	}
	for _, res := range c.res {
		if res <= r.Resolution {
			continue
		}
		if a := c.Align(from, res, d.Commodity); !a.Equal(from) {
			d.Ancestors = append(d.Ancestors, a)
		}
	}
	return nil
}

// Align returns the start of the interval of resolution r, on the
// balancing calendar of com, that contains t.
func (c *Checker) Align(t time.Time, r metering.Resolution, com metering.Commodity) time.Time {
	if d, ok := r.Fixed(); ok {
		// Berlin's offsets are whole hours, so the UTC grid of an hour
		// and its fractions is the local one.
		return t.Truncate(d)
	}
	day := c.cal.BalancingDay(t, com)
	switch r {
	case metering.Day:
		return c.cal.BalancingDayStart(day, com)
	case metering.Month:
		return c.cal.MonthStart(day.Year, day.Month, com)
	default: // metering.Year
		return c.cal.MonthStart(day.Year, time.January, com)
	}
}

// checkExtra checks the declared extra columns of r.
// CheckColumns reports why the extra columns of r do not fit t's
// declared columns, or nil: every column r sets is declared, every identity
// column is set, and every value passes its column's check. It is the part
// of Check that depends on the columns alone.
func (t *Table) CheckColumns(r *Reading) error { return checkExtra(t, r) }

func checkExtra(t *Table, r *Reading) error {
	for k := range r.Extra {
		if !slices.ContainsFunc(t.Columns, func(c Column) bool { return c.Name == k }) {
			return fmt.Errorf("extra column %q not declared", k)
		}
	}
	for _, c := range t.Columns {
		v, ok := r.Extra[c.Name]
		if !ok {
			if c.Identity {
				return fmt.Errorf("identity column %q missing", c.Name)
			}
			continue
		}
		if err := c.Check(v); err != nil {
			return fmt.Errorf("column %q: value %s: %v", c.Name, shownValue(v), err)
		}
	}
	return nil
}

// canonicalOBIS reports whether s is the canonical spelling of o, without
// building a string.
func canonicalOBIS(o metering.OBIS, s string) bool {
	var buf [23]byte
	b, _ := o.AppendText(buf[:0])
	return string(b) == s
}

// validVersionScope reports whether s is a network operator id of 1 to 35
// characters without colon or white space, a colon, and a month YYYY-MM.
// The hot tier's constraint on the column says the same.
func validVersionScope(s string) bool {
	op, month, ok := strings.Cut(s, ":")
	if !ok || op == "" || len(op) > 35 || strings.ContainsFunc(op, isSpace) ||
		len(month) != 7 || month[4] != '-' || !digits(month[:4]) || !digits(month[5:]) {
		return false
	}
	m := (month[5]-'0')*10 + month[6] - '0'
	return m >= 1 && m <= 12
}

// isSpace is the [:space:] class of PostgreSQL's regular expressions.
func isSpace(r rune) bool {
	return r == ' ' || r == '\t' || r == '\n' || r == '\v' || r == '\f' || r == '\r'
}

// A Batch is a batch of readings that passed CheckBatch.
type Batch struct {
	Rows []Reading
	// Derived holds what each row implies, by index.
	Derived []Derived
	// Repeats marks, by index, the rows that repeat an earlier row of the
	// batch identically: a redelivery within the batch, to be skipped.
	Repeats []bool
	// Shared marks, by index, the rows whose merge key (series and from)
	// another row of the batch has too, under any version: only their
	// outcomes depend on the batch's other rows.
	Shared []bool
}

// CheckBatch checks every row with Check and then the batch in itself:
// a row restated under the key and version of an earlier one with other
// content, two network operators for one reading, overlapping intervals of
// one series and version. It names every bad row it finds: an *Error of
// kind InvalidInput for malformed rows, IntegrityViolation for conflicts.
// op names the operation in the error.
func (c *Checker) CheckBatch(op string, rows []Reading) (*Batch, error) {
	b := &Batch{Rows: rows, Derived: make([]Derived, len(rows)), Repeats: make([]bool, len(rows)), Shared: make([]bool, len(rows))}
	bad := c.checkRows(rows, b.Derived)
	if err := bad.Err(InvalidInput, op, c.t.Name); err != nil {
		return nil, err
	}
	b.checkConflicts(c.t, bad)
	if err := bad.Err(IntegrityViolation, op, c.t.Name); err != nil {
		return nil, err
	}
	return b, nil
}

// parallelRows is the least number of rows checkRows gives a goroutine
// of its own: below it, starting one costs more than the checks.
const parallelRows = 2048

// checkRows checks each row with Check, filling in d, and returns the
// rows' problems. A large batch is split into consecutive parts, one per
// processor, each checked by a Checker of its own: a row's checks do not
// depend on the others, and the writer whose batch this is waits for them
// with nothing else to do.
func (c *Checker) checkRows(rows []Reading, d []Derived) *Problems {
	parts := min(runtime.GOMAXPROCS(0), len(rows)/parallelRows)
	if parts <= 1 {
		var bad Problems
		c.checkPart(rows, d, 0, &bad)
		return &bad
	}
	found := make([]Problems, parts)
	var wg sync.WaitGroup
	for k := range parts {
		lo, hi := k*len(rows)/parts, (k+1)*len(rows)/parts
		pc := c
		if k > 0 {
			pc = NewChecker(c.t, c.cal)
		}
		wg.Go(func() { pc.checkPart(rows[lo:hi], d[lo:hi], lo, &found[k]) })
	}
	wg.Wait()
	bad := &found[0]
	for k := 1; k < parts; k++ {
		bad.merge(&found[k])
	}
	return bad
}

// checkPart checks rows, the batch's from its row first on, into bad.
func (c *Checker) checkPart(rows []Reading, d []Derived, first int, bad *Problems) {
	for i := range rows {
		if err := c.Check(&rows[i], &d[i]); err != nil {
			bad.Add(first+i, "%v", err)
		}
	}
}

// CompareSeries orders readings by series: market location, OBIS code and
// the table's identity columns.
func (t *Table) CompareSeries(a, b *Reading) int {
	if c := strings.Compare(a.MaLo, b.MaLo); c != 0 {
		return c
	}
	if c := strings.Compare(a.OBIS, b.OBIS); c != 0 {
		return c
	}
	for _, col := range t.Columns {
		if !col.Identity {
			continue
		}
		if c := strings.Compare(a.Extra[col.Name], b.Extra[col.Name]); c != 0 {
			return c
		}
	}
	return 0
}

// seriesRanks returns the rank of each row's series in CompareSeries
// order, equal for rows of one series. Rows come in runs of a series, so
// only the runs' first rows are compared and sorted, and the batch's sort
// compares integers in place of strings.
func seriesRanks(t *Table, rows []Reading) []int32 {
	rank := make([]int32, len(rows))
	var firsts []int32 // the first row of each run
	for i := range rows {
		if i == 0 || t.CompareSeries(&rows[i-1], &rows[i]) != 0 {
			firsts = append(firsts, int32(i))
		}
		rank[i] = int32(len(firsts) - 1) // the run's, until ranked below
	}
	runs := slices.Clone(firsts)
	slices.SortStableFunc(runs, func(x, y int32) int { return t.CompareSeries(&rows[x], &rows[y]) })
	runRank := make([]int32, len(firsts))
	var r int32
	for k, f := range runs {
		if k > 0 && t.CompareSeries(&rows[runs[k-1]], &rows[f]) != 0 {
			r++
		}
		run, _ := slices.BinarySearch(firsts, f)
		runRank[run] = r
	}
	for i := range rank {
		rank[i] = runRank[rank[i]]
	}
	return rank
}

// checkConflicts finds the integrity violations inside the batch and marks
// exact repetitions of an earlier row. It sorts the rows by series, from
// and version, which a batch delivered meter by meter mostly is already,
// and compares neighbours.
func (b *Batch) checkConflicts(t *Table, bad *Problems) {
	rows := b.Rows
	rank := seriesRanks(t, rows)
	order := sortRuns(len(rows), func(x, y int32) int {
		a, c := &rows[x], &rows[y]
		if r := cmp.Compare(rank[x], rank[y]); r != 0 {
			return r
		}
		if r := a.From.Compare(c.From); r != 0 {
			return r
		}
		if r := cmp.Compare(a.Version, c.Version); r != 0 {
			return r
		}
		return cmp.Compare(x, y) // the first delivery of a key first
	})
	first := 0 // position in order of the first row of the current merge key
	for p := 1; p < len(order); p++ {
		i, j := int(order[p-1]), int(order[p])
		prev, s := &rows[i], &rows[j]
		if rank[i] != rank[j] || !prev.From.Equal(s.From) {
			first = p
			continue
		}
		b.Shared[i], b.Shared[j] = true, true
		if prev.Version == s.Version {
			// prev is the first occurrence: a third copy compares to the
			// second, which is identical to the first or already refused.
			if col, was, is := t.Restated(prev, s); col != "" {
				bad.Add(j, "restates row %d under version %d: %s %s, there %s", i, s.Version, col, is, was)
			} else {
				b.Repeats[j] = true
			}
			continue
		}
		if f := int(order[first]); rows[f].NetworkOperator() != s.NetworkOperator() {
			bad.Add(j, "network operator %s, but row %d of the same reading has %s", s.NetworkOperator(), f, rows[f].NetworkOperator())
		}
	}
	if t.TimeModel != Interval {
		return
	}
	// A coarser interval of the series and version containing a row can
	// only start at one of the row's ancestors.
	for i := range rows {
		s := &rows[i]
		for _, a := range b.Derived[i].Ancestors {
			k, found := slices.BinarySearchFunc(order, s, func(x int32, s *Reading) int {
				o := &rows[x]
				if r := t.CompareSeries(o, s); r != 0 {
					return r
				}
				if r := o.From.Compare(a); r != 0 {
					return r
				}
				return cmp.Compare(o.Version, s.Version)
			})
			// The row starting there may be a finer one ending before s.
			if o := int(order[min(k, len(order)-1)]); found && rows[o].To.After(s.From) {
				bad.Add(i, "overlaps row %d (%s from %s) within version %d",
					o, rows[o].Resolution, a.Format(time.RFC3339), s.Version)
			}
		}
	}
}

// Restated names the first column in which two readings of one key and
// version differ in what they state, with a's value and b's, or returns
// col "". The transaction time, the derived balancing day and the
// provenance columns (where a delivery came from) are not statements of a
// reading. This is the one definition of a restated value:
// redelivering a reading is a no-op, restating it differently under the
// same version is an integrity violation, in either tier.
func (t *Table) Restated(a, b *Reading) (col, was, is string) {
	switch {
	case a.Value != b.Value:
		return "value", a.Value.String(), b.Value.String()
	case !a.To.Equal(b.To):
		return "to", formatTime(a.To), formatTime(b.To)
	case a.Resolution != b.Resolution:
		return "resolution", a.Resolution.String(), b.Resolution.String()
	case a.Unit != b.Unit:
		return "unit", a.Unit.String(), b.Unit.String()
	case a.Quality != b.Quality:
		return "quality", a.Quality.String(), b.Quality.String()
	case t.CommodityOf(a) != t.CommodityOf(b):
		return "sparte", t.CommodityOf(a).String(), t.CommodityOf(b).String()
	case a.VersionScope != b.VersionScope:
		return "version_scope", a.VersionScope, b.VersionScope
	case a.MeLo != b.MeLo:
		return "melo_id", a.MeLo, b.MeLo
	case a.Subject != b.Subject:
		return "subject_id", a.Subject, b.Subject
	}
	for _, c := range t.Columns {
		if c.Identity || c.Provenance() {
			continue
		}
		x, xok := a.Extra[c.Name]
		y, yok := b.Extra[c.Name]
		if x != y || xok != yok {
			return c.Name, x, y
		}
	}
	return "", "", ""
}

// CommodityOf returns r's commodity, or the table's default.
func (t *Table) CommodityOf(r *Reading) metering.Commodity {
	if r.Commodity == 0 {
		return t.Commodity
	}
	return r.Commodity
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return "(none)"
	}
	return t.UTC().Format(time.RFC3339Nano)
}

package hot

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/meterstore/meterstore/internal/hot/pgnum"
	"github.com/meterstore/meterstore/metering"
)

// A staged row is a Reading checked and converted to what the staging
// table receives, plus what the integrity checks need to know about it.
type staged struct {
	src        *Reading
	row        int32 // index in the batch
	probe      bool  // checked against stored rows before the insert
	sparte     string
	unit       string
	quality    string
	resolution string
	from, to   time.Time
	value      pgnum.Micro
	version    pgnum.Uint
	day        time.Time // balancing day, midnight UTC, sent as a date
	melo       *string   // nil is NULL
	subject    *string
	extra      []any // per declared column: *string, *int64 or nil
	// anc holds the starts of the coarser accepted intervals containing
	// this one: the only places a containing row of the series can start.
	anc []time.Time
}

// A batch is a validated batch ready to be staged.
type batch struct {
	rows   []staged // rows to stage: first occurrences, in batch order
	status []Status
}

// codeNames holds the canonical spelling of every defined code, indexed by
// value, "" for values that are not codes: a row's codes are looked up, not
// parsed.
type codeNames struct {
	commodity, unit, quality, resolution [256]string
}

func newCodeNames() *codeNames {
	c := new(codeNames)
	fill := func(dst *[256]string, name func(int) string, ok func(int) bool) {
		for i := 1; i < 256; i++ {
			if ok(i) {
				dst[i] = name(i)
			}
		}
	}
	fill(&c.commodity, func(i int) string { return metering.Commodity(i).String() },
		func(i int) bool { return validCode(metering.Commodity(i), metering.ParseCommodity) })
	fill(&c.unit, func(i int) string { return metering.Unit(i).String() },
		func(i int) bool { return validCode(metering.Unit(i), metering.ParseUnit) })
	fill(&c.quality, func(i int) string { return metering.Quality(i).String() },
		func(i int) bool { return validCode(metering.Quality(i), metering.ParseQuality) })
	fill(&c.resolution, func(i int) string { return metering.Resolution(i).String() },
		func(i int) bool { return validCode(metering.Resolution(i), metering.ParseResolution) })
	return c
}

// check validates v for the column.
func (c Column) check(v string) error {
	if v == "" {
		return fmt.Errorf("empty value (leave the column out for NULL)")
	}
	if c.typ() == BigInt {
		// One spelling per number: the value may be part of a key.
		if n, err := strconv.ParseInt(v, 10, 64); err != nil || strconv.FormatInt(n, 10) != v {
			return fmt.Errorf("not a bigint in canonical form")
		}
	}
	if len(c.Values) > 0 && !slices.Contains(c.Values, v) {
		return fmt.Errorf("not one of %s", strings.Join(c.Values, ", "))
	}
	return nil
}

// A checker validates the rows of one batch. Consecutive rows mostly share
// their ids and scope, so each remembers the last spelling that passed.
type checker struct {
	h                   *Tier
	t                   *Table
	res                 []metering.Resolution
	lastMaLo, lastMeLo  string
	lastOBIS, lastScope string
	lastMedium          metering.Commodity
	lastMediumOK        bool
	lastDay, lastDayEnd time.Time // the balancing day of the last row, as an interval
	lastDayCom          metering.Commodity
	lastDayDate         time.Time
}

// prepare validates every row and checks the batch in itself: restated
// keys, two network operators for a reading, overlapping intervals of one
// version. It names every bad row it finds before giving up.
func (h *Tier) prepare(t *Table, rows []Reading) (*batch, error) {
	var bad problems
	b := &batch{rows: make([]staged, len(rows)), status: make([]Status, len(rows))}
	c := &checker{h: h, t: t, res: t.resolutions()}
	n := 0
	for i := range rows {
		if err := c.stage(&rows[i], i, &b.rows[n]); err != nil {
			bad.add(i, "%v", err)
			continue
		}
		n++
	}
	b.rows = b.rows[:n]
	if !bad.empty() {
		return nil, bad.error(InvalidInput, "write", t.Name)
	}
	b.checkBatch(t, &bad)
	if !bad.empty() {
		return nil, bad.error(IntegrityViolation, "write", t.Name)
	}
	return b, nil
}

// stage validates one reading and converts it into s.
func (c *checker) stage(r *Reading, i int, s *staged) error {
	*s = staged{src: r, row: int32(i)}
	h, t := c.h, c.t
	if r.MaLo != c.lastMaLo {
		if _, err := metering.ParseMaLo(r.MaLo); err != nil {
			return fmt.Errorf("malo_id: %w", err)
		}
		c.lastMaLo = r.MaLo
	}
	if r.MeLo != "" {
		if r.MeLo != c.lastMeLo {
			if _, err := metering.ParseMeLo(r.MeLo); err != nil {
				return fmt.Errorf("melo_id: %w", err)
			}
			c.lastMeLo = r.MeLo
		}
		s.melo = &r.MeLo
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
	com := r.Commodity
	if com == 0 {
		com = t.Commodity
	}
	if s.sparte = h.codes.commodity[com]; s.sparte == "" {
		return fmt.Errorf("sparte not set and the table has no default")
	}
	if c.lastMediumOK && c.lastMedium != com {
		return fmt.Errorf("obis_code %s measures %s, the reading is %s", r.OBIS, c.lastMedium, com)
	}

	if r.From.IsZero() {
		return fmt.Errorf("from not set")
	}
	if r.From.Nanosecond()%1000 != 0 || r.To.Nanosecond()%1000 != 0 {
		return fmt.Errorf("from or to finer than a microsecond")
	}
	s.from = r.From.UTC()
	if t.TimeModel == Point {
		if !r.To.IsZero() || r.Resolution != 0 {
			return fmt.Errorf("a point table's readings have no to and no resolution")
		}
	} else if err := c.stageInterval(r, com, s); err != nil {
		return err
	}

	if r.Value > MaxDecimal || r.Value < -MaxDecimal {
		return fmt.Errorf("value %s exceeds numeric(18,6)", r.Value)
	}
	s.value = pgnum.Micro(r.Value)
	if s.unit = h.codes.unit[r.Unit]; s.unit == "" {
		return fmt.Errorf("unit not set or unknown")
	}
	if s.quality = h.codes.quality[r.Quality]; s.quality == "" {
		return fmt.Errorf("quality not set or unknown")
	}
	s.version = pgnum.Uint(r.Version)
	if r.VersionScope != c.lastScope {
		if !validVersionScope(r.VersionScope) {
			return fmt.Errorf("version_scope %q: want network operator id, colon, balancing month YYYY-MM", r.VersionScope)
		}
		c.lastScope = r.VersionScope
	}
	if r.Subject != "" {
		s.subject = &r.Subject
	}
	s.day = c.balancingDay(s.from, com)

	if len(t.Columns) > 0 || len(r.Extra) > 0 {
		if err := stageExtra(t, r, s); err != nil {
			return err
		}
	}
	return nil
}

// balancingDay returns the balancing day of t as midnight UTC of its date.
// Rows of one day come together, so the last day is tried first.
func (c *checker) balancingDay(t time.Time, com metering.Commodity) time.Time {
	if com == c.lastDayCom && !t.Before(c.lastDay) && t.Before(c.lastDayEnd) {
		return c.lastDayDate
	}
	d := c.h.cal.BalancingDay(t, com)
	c.lastDayCom = com
	c.lastDay, c.lastDayEnd = c.h.cal.BalancingDayStart(d, com), c.h.cal.BalancingDayEnd(d, com)
	c.lastDayDate = time.Date(d.Year, d.Month, d.Day, 0, 0, 0, 0, time.UTC)
	return c.lastDayDate
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
// The constraint on the column says the same.
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

// stageInterval checks that the interval lies on the grid of its resolution,
// which makes two intervals of a series either nested or disjoint, and finds
// the intervals of coarser resolutions that contain it.
func (c *checker) stageInterval(r *Reading, com metering.Commodity, s *staged) error {
	h := c.h
	if r.Resolution == 0 || !slices.Contains(c.res, r.Resolution) {
		return fmt.Errorf("resolution %v not accepted by the table", r.Resolution)
	}
	s.resolution = h.codes.resolution[r.Resolution]
	if start := h.align(s.from, r.Resolution, com); !start.Equal(s.from) {
		return fmt.Errorf("from %s is not on the %s grid (nearest start before it: %s)",
			s.from.Format(time.RFC3339Nano), r.Resolution, start.Format(time.RFC3339))
	}
	s.to = r.To.UTC()
	if want := h.cal.Next(s.from, r.Resolution); !s.to.Equal(want) {
		return fmt.Errorf("to %s: a %s interval from %s ends at %s",
			s.to.Format(time.RFC3339Nano), r.Resolution, s.from.Format(time.RFC3339), want.Format(time.RFC3339))
	}
	for _, res := range c.res {
		if res <= r.Resolution {
			continue
		}
		if a := h.align(s.from, res, com); !a.Equal(s.from) {
			s.anc = append(s.anc, a)
		}
	}
	return nil
}

// align returns the start of the interval of resolution r, on the
// balancing calendar of com, that contains t.
func (h *Tier) align(t time.Time, r metering.Resolution, com metering.Commodity) time.Time {
	if d, ok := r.Fixed(); ok {
		// Berlin's offsets are whole hours, so the UTC grid of an hour
		// and its fractions is the local one.
		return t.Truncate(d)
	}
	day := h.cal.BalancingDay(t, com)
	switch r {
	case metering.Day:
		return h.cal.BalancingDayStart(day, com)
	case metering.Month:
		return h.cal.MonthStart(day.Year, day.Month, com)
	default: // metering.Year
		return h.cal.MonthStart(day.Year, time.January, com)
	}
}

func stageExtra(t *Table, r *Reading, s *staged) error {
	for k := range r.Extra {
		if !slices.ContainsFunc(t.Columns, func(c Column) bool { return c.Name == k }) {
			return fmt.Errorf("extra column %q not declared", k)
		}
	}
	s.extra = make([]any, len(t.Columns))
	for i, c := range t.Columns {
		v, ok := r.Extra[c.Name]
		if !ok {
			if c.Identity {
				return fmt.Errorf("identity column %q missing", c.Name)
			}
			continue
		}
		if err := c.check(v); err != nil {
			return fmt.Errorf("column %q: value %q: %v", c.Name, v, err)
		}
		if c.typ() == BigInt {
			n, _ := strconv.ParseInt(v, 10, 64)
			s.extra[i] = &n
		} else {
			s.extra[i] = &v
		}
	}
	return nil
}

// compareSeries orders rows by series: market location, OBIS code and
// identity columns.
func compareSeries(ident []Column, a, b *staged) int {
	if c := strings.Compare(a.src.MaLo, b.src.MaLo); c != 0 {
		return c
	}
	if c := strings.Compare(a.src.OBIS, b.src.OBIS); c != 0 {
		return c
	}
	for _, col := range ident {
		if c := strings.Compare(a.src.Extra[col.Name], b.src.Extra[col.Name]); c != 0 {
			return c
		}
	}
	return 0
}

// checkBatch finds the integrity violations inside the batch and marks
// exact repetitions of an earlier row as Present, dropping them from b.rows.
// It sorts the rows by series, from and version, which a batch delivered
// meter by meter mostly is already, and compares neighbours.
func (b *batch) checkBatch(t *Table, bad *problems) {
	ident := t.identity()
	order := make([]int32, len(b.rows))
	for i := range order {
		order[i] = int32(i)
	}
	key := func(x, y int32) int {
		a, c := &b.rows[x], &b.rows[y]
		if r := compareSeries(ident, a, c); r != 0 {
			return r
		}
		if r := a.from.Compare(c.from); r != 0 {
			return r
		}
		if r := cmp.Compare(a.version, c.version); r != 0 {
			return r
		}
		return cmp.Compare(a.row, c.row) // the first delivery of a key first
	}
	slices.SortFunc(order, key)
	first := 0 // position in order of the first row of the current merge key
	for p := 1; p < len(order); p++ {
		prev, s := &b.rows[order[p-1]], &b.rows[order[p]]
		if compareSeries(ident, prev, s) != 0 || !prev.from.Equal(s.from) {
			first = p
			continue
		}
		if prev.version == s.version {
			// prev is the first occurrence: a third copy compares to the
			// second, which is identical to the first or already refused.
			if diff := prev.differs(t, s); diff != "" {
				bad.add(int(s.row), "restates row %d under version %d with a different %s", prev.row, uint64(s.version), diff)
			} else {
				b.status[s.row] = Present
			}
			continue
		}
		if f := &b.rows[order[first]]; f.src.NetworkOperator() != s.src.NetworkOperator() {
			bad.add(int(s.row), "network operator %s, but row %d of the same reading has %s", s.src.NetworkOperator(), f.row, f.src.NetworkOperator())
		}
	}
	// A coarser interval of the series and version containing a row can
	// only start at one of the row's ancestors.
	for i := range b.rows {
		s := &b.rows[i]
		for _, a := range s.anc {
			j, found := slices.BinarySearchFunc(order, s, func(x int32, s *staged) int {
				o := &b.rows[x]
				if r := compareSeries(ident, o, s); r != 0 {
					return r
				}
				if r := o.from.Compare(a); r != 0 {
					return r
				}
				return cmp.Compare(o.version, s.version)
			})
			// The row starting there may be a finer one ending before s.
			if o := &b.rows[order[min(j, len(order)-1)]]; found && o.to.After(s.from) {
				bad.add(int(s.row), "overlaps row %d (%s from %s) within version %d",
					o.row, o.resolution, a.Format(time.RFC3339), uint64(s.version))
			}
		}
	}
	n := 0
	for i := range b.rows {
		if b.status[b.rows[i].row] == 0 {
			b.rows[n] = b.rows[i]
			n++
		}
	}
	b.rows = b.rows[:n]
}

// differs names the first column in which two rows of one key and version
// differ, or returns "".
func (s *staged) differs(t *Table, o *staged) string {
	switch {
	case s.value != o.value:
		return "value"
	case !s.to.Equal(o.to):
		return "to"
	case s.resolution != o.resolution:
		return "resolution"
	case s.unit != o.unit:
		return "unit"
	case s.quality != o.quality:
		return "quality"
	case s.sparte != o.sparte:
		return "sparte"
	case s.src.VersionScope != o.src.VersionScope:
		return "version_scope"
	case s.src.MeLo != o.src.MeLo:
		return "melo_id"
	case s.src.Subject != o.src.Subject:
		return "subject_id"
	}
	for _, c := range t.Columns {
		if !c.Identity && s.src.Extra[c.Name] != o.src.Extra[c.Name] {
			return c.Name
		}
	}
	return ""
}

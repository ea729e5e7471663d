// Package mscons reads metered values from EDIFACT MSCONS messages, as
// German market communication exchanges them (EDI@Energy MSCONS MIG 2.4c
// and the older 2.2e, both on UN/EDIFACT D.04B), into readings of a table.
// Other versions are refused.
//
// 2.2e predates the market location id (MaKo 2017): its LOC+172 names the
// 33-character metering point, which Options.MaLoOf maps to a market
// location, and an 11-digit id there is refused. The rest of what the
// reader maps (qualifiers, dates, units) is read alike in both.
//
// One message is the unit of atomicity: a message that breaks a rule is
// refused whole, naming its segment, and yields no readings.
package mscons

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/meterstore/meterstore/internal/edifact"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// Supported lists the message identifiers of UNH this package reads: the
// EDI@Energy MSCONS message implementation guides 2.4c (26.07.2024) and
// 2.2e.
var Supported = [][]string{
	{"MSCONS", "D", "04B", "UN", "2.4c"},
	{"MSCONS", "D", "04B", "UN", "2.2e"},
}

// v22e is the version of the guide whose LOC+172 names only metering
// points.
const v22e = "2.2e"

// Options configure how messages become readings.
type Options struct {
	// Table is the table the readings are for; its time model,
	// resolutions and commodity are checked here, so that a refusal
	// can name the segment.
	Table *series.Table
	// MaLoOf maps a 33-character metering location id (MeLo) to the
	// market location id (MaLo) it belongs to. A message that names a
	// MeLo without an entry is refused.
	MaLoOf map[string]string
	// Calendar is the Berlin calendar; nil means a new one.
	Calendar *metering.Calendar
}

// A Message is what one MSCONS message yielded.
type Message struct {
	Number   int    // the message's place in the interchange, from 1
	Ref      string // the message reference of UNH
	Document string // the document number of BGM
	Sender   string // the market partner id of NAD+MS
	// Version is the document time of DTM+137 in UTC as the 14 digits
	// YYYYMMDDhhmmss: a later document supersedes an earlier one.
	Version uint64
	// Readings and, beside each, the number of its QTY segment within
	// the message.
	Readings []series.Reading
	Segments []int
	// Err, if not nil, refuses the message: it yields no readings.
	Err *edifact.MessageError
}

// Read returns the messages of an interchange, each with its readings or
// the reason it is refused.
func Read(ic *edifact.Interchange, opts Options) ([]Message, error) {
	if opts.Table == nil {
		return nil, errors.New("mscons: no table")
	}
	if opts.Calendar == nil {
		cal, err := metering.NewCalendar()
		if err != nil {
			return nil, fmt.Errorf("mscons: %w", err)
		}
		opts.Calendar = cal
	}
	out := make([]Message, 0, len(ic.Messages))
	for _, m := range ic.Messages {
		r := reader{opts: &opts, dec: ic.Delimiters.Decimal, msg: m}
		out = append(out, r.read())
	}
	return out, nil
}

// A reader walks one message's segments.
type reader struct {
	opts *Options
	dec  byte
	msg  *edifact.Message
	out  Message

	version  string // the guide's version, from UNH
	header   bool   // before UNS
	malo     string
	melo     string
	obis     string
	medium   metering.Commodity
	pending  *pending
	seen     map[seriesKey]int // series and start of every interval, to its QTY segment
	location *edifact.Segment

	// The balancing day last computed, which the next reading most
	// likely shares.
	dayCom           metering.Commodity
	dayStart, dayEnd time.Time
	day              metering.Date
	scope            string
}

type seriesKey struct {
	malo, obis string
	from       int64
}

// pending is a QTY whose dates are still to come.
type pending struct {
	seg      *edifact.Segment
	r        series.Reading
	from, to *edifact.Segment
}

func (rd *reader) read() Message {
	m := rd.msg
	rd.out = Message{Number: m.Number, Ref: m.Ref}
	if m.Err != nil {
		rd.out.Err = m.Err
		return rd.out
	}
	rd.header = true
	// Sized for the values, so that neither grows value by value.
	n := 0
	for i := range m.Segments {
		if m.Segments[i].Tag == "QTY" {
			n++
		}
	}
	rd.seen = make(map[seriesKey]int, n)
	rd.out.Readings, rd.out.Segments = make([]series.Reading, 0, n), make([]int, 0, n)
	for i := range m.Segments {
		if err := rd.segment(&m.Segments[i]); err != nil {
			rd.out.Err = err
			rd.out.Readings, rd.out.Segments = nil, nil
			return rd.out
		}
	}
	return rd.out
}

func (rd *reader) fail(seg *edifact.Segment, format string, args ...any) *edifact.MessageError {
	return rd.msg.Fail(seg, format, args...)
}

func (rd *reader) segment(seg *edifact.Segment) *edifact.MessageError {
	switch seg.Tag {
	case "UNH":
		i := slices.IndexFunc(Supported, func(id []string) bool { return slices.Equal(rd.msg.Type, id) })
		if i < 0 {
			ids := make([]string, len(Supported))
			for j, id := range Supported {
				ids[j] = strings.Join(id, ":")
			}
			return rd.fail(seg, "message %s is not supported: only %s (EDI@Energy MSCONS MIG 2.4c and 2.2e) are read",
				strings.Join(rd.msg.Type, ":"), strings.Join(ids, " and "))
		}
		rd.version = Supported[i][4]
	case "BGM":
		rd.out.Document = seg.Element(1, 0)
		switch fn := seg.Element(2, 0); {
		case rd.out.Document == "":
			return rd.fail(seg, "document number missing")
		case fn == "1":
			return rd.fail(seg, "a cancellation (message function 1) is not supported: the store keeps every version; deliver a correction")
		case fn != "9":
			return rd.fail(seg, "message function %q: want 9 (original)", fn)
		}
	case "NAD":
		switch q := seg.Element(0, 0); {
		case q == "MS":
			if rd.out.Sender = seg.Element(1, 0); rd.out.Sender == "" || strings.ContainsAny(rd.out.Sender, ": \t") {
				return rd.fail(seg, "sender id %q: want a market partner id", rd.out.Sender)
			}
		case q == "DP":
			if err := rd.flush(seg); err != nil {
				return err
			}
			rd.malo, rd.melo, rd.obis, rd.location = "", "", "", nil
		}
	case "UNS":
		rd.header = false
	case "DTM":
		return rd.dtm(seg)
	case "LOC":
		if seg.Element(0, 0) != "172" {
			return nil
		}
		if err := rd.flush(seg); err != nil {
			return err
		}
		return rd.loc(seg)
	case "LIN":
		if err := rd.flush(seg); err != nil {
			return err
		}
		rd.obis = ""
	case "PIA":
		if seg.Element(0, 0) != "5" {
			return nil
		}
		code := seg.Element(1, 0)
		o, err := metering.ParseOBIS(code)
		if err != nil || seg.Element(1, 1) != "SRW" {
			return rd.fail(seg, "product id %q (%s): want an OBIS code with code list SRW", code, seg.Element(1, 1))
		}
		rd.obis = o.String()
		rd.medium, _ = o.Medium()
	case "QTY":
		if err := rd.flush(seg); err != nil {
			return err
		}
		return rd.qty(seg)
	case "UNT":
		if err := rd.flush(seg); err != nil {
			return err
		}
		if len(rd.out.Readings) == 0 {
			return rd.fail(seg, "the message holds no values")
		}
	}
	// Other segments (RFF, CCI, STS, ...) carry nothing the table keeps.
	return nil
}

func (rd *reader) loc(seg *edifact.Segment) *edifact.MessageError {
	id := seg.Element(1, 0)
	rd.location = seg
	switch len(id) {
	case 11:
		if rd.version == v22e {
			return rd.fail(seg, "location id %q: MSCONS 2.2e names a 33-character metering point here; market location ids came later", id)
		}
		if _, err := metering.ParseMaLo(id); err != nil {
			return rd.fail(seg, "market location: %v", err)
		}
		rd.malo, rd.melo = id, ""
	case 33:
		if _, err := metering.ParseMeLo(id); err != nil {
			return rd.fail(seg, "metering location: %v", err)
		}
		malo, ok := rd.opts.MaLoOf[id]
		if !ok {
			return rd.fail(seg, "metering location %s: no market location configured for it; the table is keyed by market location", id)
		}
		rd.malo, rd.melo = malo, id
	default:
		return rd.fail(seg, "location id %q: want an 11-digit market location or a 33-character metering location", id)
	}
	return nil
}

// qualities maps the quantity qualifiers of the MIG's QTY (DE 6063) to
// the quality model. Z30 (missing value), Z31 and Z47 have no place in
// it and are refused with the unknown ones.
var qualities = map[string]metering.Quality{
	"220": metering.TrueValue,
	"67":  metering.Substitute,
	"201": metering.Proposed,
	"20":  metering.Unusable,
	"187": metering.Forecast,
	"79":  metering.Summed,
	"Z18": metering.Provisional,
}

func (rd *reader) qty(seg *edifact.Segment) *edifact.MessageError {
	switch {
	case rd.header:
		return rd.fail(seg, "QTY before UNS")
	case rd.malo == "":
		return rd.fail(seg, "QTY without a location (LOC+172)")
	case rd.obis == "":
		return rd.fail(seg, "QTY without an OBIS code (PIA+5)")
	}
	q, ok := qualities[seg.Element(0, 0)]
	if !ok {
		return rd.fail(seg, "quantity qualifier %q is not one the store keeps: want 220, 67, 201, 20, 187, 79 or Z18", seg.Element(0, 0))
	}
	text := seg.Element(0, 1)
	if rd.dec == ',' {
		if strings.Contains(text, ".") {
			return rd.fail(seg, "quantity %q: the decimal mark is ','", text)
		}
		text = strings.Replace(text, ",", ".", 1)
	}
	v, err := series.ParseDecimal(text)
	if err != nil {
		return rd.fail(seg, "quantity %q: %v", seg.Element(0, 1), err)
	}
	unit, err := rd.unit(seg.Element(0, 2))
	if err != nil {
		return rd.fail(seg, "%v", err)
	}
	rd.pending = &pending{seg: seg, r: series.Reading{
		MaLo: rd.malo, MeLo: rd.melo, OBIS: rd.obis, Value: v, Unit: unit, Quality: q,
	}}
	return nil
}

// unit maps the measure unit of QTY (DE 6411). Without one, an electricity
// OBIS code implies it: energy, the time integrals (D 8, 9, 10, 29), in
// kWh, demand (D 4, 5, 6) in kW, reactive (C 3, 4) in kvarh and kvar.
// (The 2.2e interchanges in msconsconverter's tests send 1-1:1.10.0 without
// a unit.)
func (rd *reader) unit(code string) (metering.Unit, error) {
	switch code {
	case "KWH":
		return metering.KilowattHour, nil
	case "KWT":
		return metering.Kilowatt, nil
	case "":
	default:
		return 0, fmt.Errorf("measure unit %q: want KWH or KWT", code)
	}
	o, _ := metering.ParseOBIS(rd.obis)
	if o.A == 1 {
		reactive := o.C == 3 || o.C == 4
		switch o.D {
		case 8, 9, 10, 29:
			if reactive {
				return metering.KilovarHour, nil
			}
			return metering.KilowattHour, nil
		case 4, 5, 6:
			if reactive {
				return metering.Kilovar, nil
			}
			return metering.Kilowatt, nil
		}
	}
	return 0, fmt.Errorf("no measure unit, and OBIS code %s implies none", rd.obis)
}

func (rd *reader) dtm(seg *edifact.Segment) *edifact.MessageError {
	q := seg.Element(0, 0)
	if rd.header {
		if q != "137" {
			return nil
		}
		t, err := rd.instant(seg)
		if err != nil {
			return err
		}
		v, _ := strconv.ParseUint(t.UTC().Format("20060102150405"), 10, 64)
		rd.out.Version = v
		return nil
	}
	p := rd.pending
	if p == nil {
		// The period of a location or line item, before its values.
		return nil
	}
	switch {
	case q == "163" && rd.opts.Table.TimeModel == series.Interval:
		p.from = seg
	case q == "164" && rd.opts.Table.TimeModel == series.Interval:
		p.to = seg
	case q == "7" && rd.opts.Table.TimeModel == series.Point:
		p.from = seg
	}
	return nil
}

// instant reads the date of a DTM segment: format 303 (CCYYMMDDHHMMZZZ)
// and 304 (with seconds) carry their offset; 203 (CCYYMMDDHHMM) is Berlin
// legal time and refused in the hour the clock repeats or skips.
func (rd *reader) instant(seg *edifact.Segment) (time.Time, *edifact.MessageError) {
	v, f := seg.Element(0, 1), seg.Element(0, 2)
	var layout string
	switch f {
	case "303":
		layout = "200601021504"
	case "304":
		layout = "20060102150405"
	case "203":
		loc := rd.opts.Calendar.Location()
		t, err := time.ParseInLocation("200601021504", v, loc)
		if err != nil || len(v) != 12 {
			return time.Time{}, rd.fail(seg, "date %q: want CCYYMMDDHHMM for format 203", v)
		}
		if t.Format("200601021504") != v {
			return time.Time{}, rd.fail(seg, "date %q does not exist in Berlin (the clock skips it)", v)
		}
		if t.Add(-time.Hour).In(loc).Format("200601021504") == v || t.Add(time.Hour).In(loc).Format("200601021504") == v {
			return time.Time{}, rd.fail(seg, "date %q is ambiguous in Berlin (the clock repeats it); use format 303 with an offset", v)
		}
		return t.UTC(), nil
	default:
		return time.Time{}, rd.fail(seg, "date format %q: want 303, 304 or 203", f)
	}
	if len(v) < len(layout)+3 {
		return time.Time{}, rd.fail(seg, "date %q: want %s and an offset such as +00", v, strings.Repeat("#", len(layout)))
	}
	t, err := time.Parse(layout, v[:len(layout)])
	off := v[len(layout):]
	h, herr := strconv.Atoi(off[1:])
	if err != nil || off[0] != '+' && off[0] != '-' || herr != nil || len(off) != 3 || off[1] == '+' || off[1] == '-' || h > 14 {
		return time.Time{}, rd.fail(seg, "date %q: want format %s with an offset of hours such as +00", v, f)
	}
	d := time.Duration(h) * time.Hour
	if off[0] == '-' {
		d = -d
	}
	return t.Add(-d).UTC(), nil
}

// flush completes the pending value, if any, with its dates; at is the
// segment that ends it.
func (rd *reader) flush(at *edifact.Segment) *edifact.MessageError {
	p := rd.pending
	if p == nil {
		return nil
	}
	rd.pending = nil
	t := rd.opts.Table
	if p.from == nil || t.TimeModel == series.Interval && p.to == nil {
		want := "DTM+163 and DTM+164"
		if t.TimeModel == series.Point {
			want = "DTM+7"
		}
		return rd.fail(p.seg, "the value has no %s before segment %d (%s)", want, at.Position-rd.msg.Segments[0].Position+1, at.Tag)
	}
	if rd.out.Sender == "" {
		return rd.fail(p.seg, "no sender (NAD+MS) in the header")
	}
	if rd.out.Version == 0 {
		return rd.fail(p.seg, "no document date (DTM+137) in the header")
	}
	r := &p.r
	var err *edifact.MessageError
	if r.From, err = rd.instant(p.from); err != nil {
		return err
	}
	com := t.Commodity
	if com == 0 {
		com = rd.medium
		r.Commodity = com
	}
	if !com.Valid() {
		return rd.fail(p.seg, "OBIS code %s names no commodity and the table has none", r.OBIS)
	}
	cal := rd.opts.Calendar
	if t.TimeModel == series.Interval {
		if r.To, err = rd.instant(p.to); err != nil {
			return err
		}
		if r.Resolution, err = rd.resolution(p, com); err != nil {
			return err
		}
	}
	if com != rd.dayCom || r.From.Before(rd.dayStart) || !r.From.Before(rd.dayEnd) {
		rd.day = cal.BalancingDay(r.From, com)
		rd.dayCom, rd.dayStart, rd.dayEnd = com, cal.BalancingDayStart(rd.day, com), cal.BalancingDayEnd(rd.day, com)
		rd.scope = fmt.Sprintf("%s:%04d-%02d", rd.out.Sender, rd.day.Year, int(rd.day.Month))
	}
	r.Version = rd.out.Version
	r.VersionScope = rd.scope
	key := seriesKey{r.MaLo, r.OBIS, r.From.UnixMicro()}
	n := p.seg.Position - rd.msg.Segments[0].Position + 1
	if first, dup := rd.seen[key]; dup {
		return rd.fail(p.from, "the interval from %s is given twice for %s %s (first by segment %d)",
			r.From.Format(time.RFC3339), r.MaLo, r.OBIS, first)
	}
	rd.seen[key] = n
	rd.out.Readings = append(rd.out.Readings, *r)
	rd.out.Segments = append(rd.out.Segments, n)
	return nil
}

// resolution finds the resolution of an interval and checks it against
// the table and the Berlin calendar: the interval must start on the grid
// of its resolution and last exactly one step of it.
func (rd *reader) resolution(p *pending, com metering.Commodity) (metering.Resolution, *edifact.MessageError) {
	cal, t := rd.opts.Calendar, rd.opts.Table
	from, to := p.r.From, p.r.To
	if !to.After(from) {
		return 0, rd.fail(p.to, "the interval ends at %s, not after its start %s", to.Format(time.RFC3339), from.Format(time.RFC3339))
	}
	var res metering.Resolution
	for r := metering.FiveMinutes; r <= metering.Year; r++ {
		if d, ok := r.Fixed(); ok && to.Sub(from) != d {
			continue // not this one, without a trip through the calendar
		}
		if cal.Next(from, r).Equal(to) {
			res = r
			break
		}
	}
	if res == 0 {
		return 0, rd.fail(p.to, "an interval of %v from %s is no resolution the store knows", to.Sub(from), from.Format(time.RFC3339))
	}
	if len(t.Resolutions) > 0 && !slices.Contains(t.Resolutions, res) {
		return 0, rd.fail(p.to, "resolution %s is not accepted by table %s", res, t.Name)
	}
	var start time.Time
	if d, ok := res.Fixed(); ok {
		start = from.Truncate(d)
	} else {
		day := cal.BalancingDay(from, com)
		switch res {
		case metering.Day:
			start = cal.BalancingDayStart(day, com)
		case metering.Month:
			start = cal.MonthStart(day.Year, day.Month, com)
		default:
			start = cal.MonthStart(day.Year, time.January, com)
		}
	}
	if !start.Equal(from) {
		return 0, rd.fail(p.from, "%s is not on the %s grid of the Berlin calendar (the interval containing it starts at %s)",
			from.Format(time.RFC3339), res, start.Format(time.RFC3339))
	}
	return res, nil
}

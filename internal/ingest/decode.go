// Package ingest reads deliveries of readings, CSV and JSON lines
// (Decoder, Run) or MSCONS (RunMSCONS), and writes them in batches through
// a WriteFunc, for meterstore ingest and serve's ingest routes alike: each
// reading is named by its line or message, so that a refused batch says
// what to fix.
package ingest

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// A Format is the encoding of a delivery.
type Format uint8

// The formats.
const (
	// CSV has a header line naming the columns, then one reading per line.
	CSV Format = iota + 1
	// JSONLines has one JSON object per line, keyed by column name.
	JSONLines
	// MSCONS is an EDIFACT interchange of MSCONS messages (RunMSCONS);
	// a message, not a batch of lines, is written atomically.
	MSCONS
)

// ParseFormat parses "csv", "jsonl" or "mscons".
func ParseFormat(s string) (Format, error) {
	switch s {
	case "csv":
		return CSV, nil
	case "jsonl", "json":
		return JSONLines, nil
	case "mscons":
		return MSCONS, nil
	}
	return 0, fmt.Errorf("ingest: format %q: want csv, jsonl or mscons", s)
}

// A Record is one decoded reading and the line it came from.
type Record struct {
	Line    int
	Reading series.Reading
}

// A LineError is a record that could not be decoded.
type LineError struct {
	Line   int
	Column string // empty when the record as a whole is bad
	Err    error
}

// Error names the line and, if known, the column: as written if it is
// plain text, else quoted with its control characters escaped, and cut
// short if it is long, for it may be anything a delivery holds.
func (e *LineError) Error() string {
	if e.Column == "" {
		return fmt.Sprintf("line %d: %v", e.Line, e.Err)
	}
	return fmt.Sprintf("line %d: %s: %v", e.Line, columnName(e.Column), e.Err)
}

// maxShownName bounds the bytes of a column's name an error shows.
const maxShownName = 64

// columnName returns name as an error shows it.
func columnName(name string) string {
	cut := len(name) > maxShownName
	if cut {
		name = strings.ToValidUTF8(name[:maxShownName], "")
	}
	if q := strconv.Quote(name); q[1:len(q)-1] != name || cut {
		if cut {
			return q + "..."
		}
		return q
	}
	return name
}

// Unwrap returns the cause.
func (e *LineError) Unwrap() error { return e.Err }

// bom is the UTF-8 encoding of U+FEFF, the byte order mark.
const bom = "\ufeff"

// A Decoder reads the readings of one table from a delivery.
type Decoder struct {
	t      *series.Table
	format Format
	csv    *csv.Reader
	// plain holds the lines the CSV reader reads from, for plainCSV;
	// fields is the record it splits a line into.
	plain  *bufio.Reader
	fields []string
	// skipped counts the lines plainCSV took past the CSV reader, which
	// numbers only the lines it read itself; slow turns plainCSV off, for
	// tests comparing it with the CSV reader.
	skipped int
	slow    bool
	header  []string
	// at holds the field of each column in a CSV record (columnName's
	// order), -1 for a column the header does not name.
	at    []int
	lines *bufio.Scanner
	line  int
}

// NewDecoder returns a decoder of readings of t in format f from r. A CSV
// header must name only columns t has, each once. A UTF-8 byte order mark
// before the first line is skipped.
func NewDecoder(r io.Reader, f Format, t *series.Table) (*Decoder, error) {
	d := &Decoder{t: t, format: f}
	// Spreadsheets write a byte order mark before UTF-8 text. It is no
	// part of the first column's name, and invisible in an error naming it.
	br := bufio.NewReader(r)
	if b, _ := br.Peek(len(bom)); string(b) == bom {
		br.Discard(len(bom))
	}
	r = crLines{br}
	switch f {
	case CSV:
		// The CSV reader reads from plain itself (bufio.NewReader keeps a
		// *bufio.Reader as large as its default), so plainCSV can take
		// whole lines from the same buffer between its reads.
		d.plain = bufio.NewReaderSize(r, plainBuffer)
		d.csv = csv.NewReader(d.plain)
		// Only the fields' strings outlive the next Read: record reads the
		// slice at once.
		d.csv.ReuseRecord = true
		header, err := d.csv.Read()
		var pe *csv.ParseError
		switch {
		case err == io.EOF:
			return nil, &LineError{Line: 1, Err: errors.New("no header naming the columns")}
		case errors.As(err, &pe):
			return nil, &LineError{Line: pe.StartLine, Err: fmt.Errorf("CSV header: %w", err)}
		case err != nil:
			return nil, fmt.Errorf("ingest: line 1: CSV header: %w", err)
		}
		// The header is the first line that is not blank.
		line, _ := d.csv.FieldPos(0)
		for i, h := range header {
			h = strings.TrimSpace(h)
			if !d.known(h) {
				return nil, &LineError{Line: line, Column: h, Err: errors.New("no such column")}
			}
			// Which of two values of a column was meant cannot be told.
			if j := slices.Index(d.header, h); j >= 0 {
				return nil, &LineError{Line: line, Column: h, Err: fmt.Errorf("named twice, as fields %d and %d", j+1, i+1)}
			}
			d.header = append(d.header, h)
		}
		// The line the header ends on: a quoted name may span lines.
		d.line = endLine(d.csv, header)
		d.at = make([]int, len(builtin)+len(t.Columns))
		for c := range d.at {
			d.at[c] = slices.Index(d.header, d.column(c))
		}
	case JSONLines:
		d.lines = bufio.NewScanner(r)
		d.lines.Buffer(make([]byte, 64<<10), 16<<20)
	case MSCONS:
		return nil, errors.New("ingest: MSCONS is read by RunMSCONS, a message at a time")
	default:
		return nil, fmt.Errorf("ingest: unknown format %d", f)
	}
	return d, nil
}

// crLines reads a delivery with every carriage return that is not
// followed by a line feed turned into one: a CR alone ends a line, as on
// classic Mac OS and in the CSV of older Excel for Mac, as a CR LF or an
// LF does. Neither format has a lone CR as data: JSON escapes it in
// strings, and no column of a reading holds one.
type crLines struct{ r *bufio.Reader }

func (c crLines) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	// Most deliveries hold no lone CR, or a CR only before each LF: the
	// search skips to the next CR rather than looking at every byte.
	for i := 0; ; i++ {
		j := bytes.IndexByte(p[i:n], '\r')
		if j < 0 {
			break
		}
		i += j
		if i+1 < n {
			if p[i+1] != '\n' {
				p[i] = '\n'
			}
		} else if next, _ := c.r.Peek(1); len(next) == 0 || next[0] != '\n' {
			p[i] = '\n'
		}
	}
	return n, err
}

// Next returns the next record, or io.EOF after the last. A record that
// cannot be decoded is a *LineError; decoding can go on after it.
func (d *Decoder) Next() (Record, error) {
	if d.format == CSV {
		return d.nextCSV()
	}
	return d.nextJSON()
}

func (d *Decoder) nextCSV() (Record, error) {
	fields, line, err := d.plainCSV()
	if fields == nil && err == nil {
		fields, line, err = d.readCSV()
	}
	if err == io.EOF {
		return Record{}, io.EOF
	}
	if err != nil {
		// A record that does not parse has no field positions to ask
		// for: its line is the ParseError's, the line the record
		// starts on, where an unterminated quote was opened.
		var pe *csv.ParseError
		if !errors.As(err, &pe) {
			return Record{}, fmt.Errorf("ingest: line %d: %w", d.line+1, err)
		}
		return Record{Line: pe.StartLine}, &LineError{Line: pe.StartLine, Err: err}
	}
	return d.record(line, func(c int) (string, bool) {
		if i := d.at[c]; i >= 0 && i < len(fields) && fields[i] != "" {
			return fields[i], true
		}
		return "", false
	})
}

func (d *Decoder) nextJSON() (Record, error) {
	for d.lines.Scan() {
		d.line++
		text := strings.TrimSpace(d.lines.Text())
		if text == "" {
			continue
		}
		raw, dup, err := object(text)
		if dup != "" {
			return Record{Line: d.line}, &LineError{Line: d.line, Column: dup, Err: err}
		}
		if err != nil {
			return Record{Line: d.line}, &LineError{Line: d.line, Err: err}
		}
		vals := make(map[string]string, len(raw))
		for k, v := range raw {
			if !d.known(k) {
				return Record{Line: d.line}, &LineError{Line: d.line, Column: k, Err: errors.New("no such column")}
			}
			s, err := scalar(v)
			if err != nil {
				return Record{Line: d.line}, &LineError{Line: d.line, Column: k, Err: err}
			}
			if s != "" {
				vals[k] = s
			}
		}
		return d.record(d.line, func(c int) (string, bool) {
			v, ok := vals[d.column(c)]
			return v, ok
		})
	}
	if err := d.lines.Err(); err != nil {
		return Record{}, fmt.Errorf("ingest: line %d: %w", d.line+1, err)
	}
	return Record{}, io.EOF
}

// object returns the members of the JSON object text. A name given twice
// is refused, with dup set to it: json.Unmarshal into a map would keep the
// last value silently, and which one was meant cannot be told.
func object(text string) (members map[string]json.RawMessage, dup string, err error) {
	defer func() {
		// A Decoder reports a truncated object as the end of its input.
		if err == io.EOF {
			err = errors.New("the JSON object is not closed on its line")
		}
	}()
	dec := json.NewDecoder(strings.NewReader(text))
	if tok, err := dec.Token(); err != nil {
		return nil, "", err
	} else if tok != json.Delim('{') {
		return nil, "", errors.New("want a JSON object")
	}
	members = make(map[string]json.RawMessage)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, "", err
		}
		name, _ := tok.(string) // a name is a string, or Token fails
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, "", err
		}
		if _, ok := members[name]; ok {
			return nil, name, errors.New("named twice")
		}
		members[name] = v
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, "", err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, "", errors.New("data after the JSON object")
	}
	return members, "", nil
}

// scalar returns a JSON string, number or null as text; a number keeps its
// digits, so a value is never rounded through a float.
func scalar(v json.RawMessage) (string, error) {
	s := strings.TrimSpace(string(v))
	switch {
	case s == "null":
		return "", nil
	case strings.HasPrefix(s, `"`):
		var out string
		err := json.Unmarshal(v, &out)
		return out, err
	case s == "true" || s == "false" || strings.HasPrefix(s, "{") || strings.HasPrefix(s, "["):
		return "", errors.New("want a string or a number")
	}
	return s, nil
}

// builtin are the columns a delivery may name besides declared ones;
// recorded_at and balancing_day are the store's to set.
var builtin = []string{"malo_id", "melo_id", "obis_code", "sparte", "from", "to", "value", "unit",
	"quality", "resolution", "version", "version_scope", "subject_id"}

// The numbers of the builtin columns; the table's declared columns
// follow them (Decoder.column).
const (
	colMaLo = iota
	colMeLo
	colOBIS
	colSparte
	colFrom
	colTo
	colValue
	colUnit
	colQuality
	colResolution
	colVersion
	colVersionScope
	colSubject
)

// column returns the name of column c: a builtin one, then the table's
// declared columns in order.
func (d *Decoder) column(c int) string {
	if c < len(builtin) {
		return builtin[c]
	}
	return d.t.Columns[c-len(builtin)].Name
}

func (d *Decoder) known(name string) bool {
	for _, b := range builtin {
		if b == name {
			return true
		}
	}
	for _, c := range d.t.Columns {
		if c.Name == name {
			return true
		}
	}
	return false
}

// record converts one record's values into a reading: value(c) returns
// the value of column c (column's numbering), false if the record has
// none. Only the encoding is checked here; what the values mean is
// Write's to check.
func (d *Decoder) record(line int, value func(c int) (string, bool)) (Record, error) {
	rec := Record{Line: line}
	r := &rec.Reading
	fail := func(col int, err error) (Record, error) {
		return rec, &LineError{Line: line, Column: d.column(col), Err: err}
	}
	v := func(c int) string { s, _ := value(c); return s }
	r.MaLo, r.MeLo, r.OBIS = v(colMaLo), v(colMeLo), v(colOBIS)
	r.VersionScope, r.Subject = v(colVersionScope), v(colSubject)
	var err error
	if s, ok := value(colSparte); ok {
		if r.Commodity, err = metering.ParseCommodity(s); err != nil {
			return fail(colSparte, err)
		}
	}
	if r.From, err = instant(v(colFrom)); err != nil {
		return fail(colFrom, err)
	}
	if s, ok := value(colTo); ok {
		if r.To, err = instant(s); err != nil {
			return fail(colTo, err)
		}
	}
	if r.Value, err = series.ParseDecimal(v(colValue)); err != nil {
		return fail(colValue, err)
	}
	if r.Unit, err = metering.ParseUnit(v(colUnit)); err != nil {
		return fail(colUnit, err)
	}
	if r.Quality, err = metering.ParseQuality(v(colQuality)); err != nil {
		return fail(colQuality, err)
	}
	if s, ok := value(colResolution); ok {
		if r.Resolution, err = metering.ParseResolution(s); err != nil {
			return fail(colResolution, err)
		}
	}
	if r.Version, err = strconv.ParseUint(v(colVersion), 10, 64); err != nil {
		return fail(colVersion, err)
	}
	for k, c := range d.t.Columns {
		if s, ok := value(len(builtin) + k); ok {
			if r.Extra == nil {
				r.Extra = map[string]string{}
			}
			r.Extra[c.Name] = s
		}
	}
	return rec, nil
}

// instant parses an RFC 3339 time with an explicit offset: a local time
// without one would be a guess across the clock change.
func instant(s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, errors.New("missing")
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q: want RFC 3339 with an offset, such as 2026-03-29T01:45:00+01:00", s)
	}
	return t, nil
}

package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

var table = &series.Table{
	Name: "power", TimeModel: series.Interval, Commodity: metering.Electricity,
	Columns: []series.Column{{Name: "channel", Identity: true}},
	Width:   series.Daily,
}

func TestDecodeCSVAndJSON(t *testing.T) {
	csvIn := "malo_id,obis_code,from,to,value,unit,quality,resolution,version,version_scope,channel\n" +
		"50000000005,1-1:1.29.0,2026-03-29T01:45:00+01:00,2026-03-29T03:00:00+02:00,1.250,kWh,220,PT15M,20260330000000,9900000000003:2026-03,A\n"
	jsonIn := `{"malo_id":"50000000005","obis_code":"1-1:1.29.0","from":"2026-03-29T01:45:00+01:00","to":"2026-03-29T03:00:00+02:00",` +
		`"value":1.250,"unit":"kWh","quality":"220","resolution":"PT15M","version":20260330000000,"version_scope":"9900000000003:2026-03","channel":"A"}` + "\n"
	for _, c := range []struct {
		f  Format
		in string
	}{{CSV, csvIn}, {JSONLines, "\n" + jsonIn}} {
		d, err := NewDecoder(strings.NewReader(c.in), c.f, table)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := d.Next()
		if err != nil {
			t.Fatal(err)
		}
		r := rec.Reading
		if rec.Line != 2 || r.MaLo != "50000000005" || r.Value != 1_250_000 || r.Version != 20260330000000 ||
			!r.From.Equal(time.Date(2026, 3, 29, 0, 45, 0, 0, time.UTC)) || r.To.Sub(r.From) != 15*time.Minute ||
			r.Unit != metering.KilowattHour || r.Extra["channel"] != "A" {
			t.Errorf("format %d: %+v at line %d", c.f, r, rec.Line)
		}
		if _, err := d.Next(); err != io.EOF {
			t.Errorf("format %d: after the last record: %v", c.f, err)
		}
	}
}

func TestDecodeErrorsNameTheLine(t *testing.T) {
	in := "malo_id,from,value,unit,quality,version\n" +
		"50000000005,2026-03-01T00:00:00Z,1,kWh,220,1\n" +
		"50000000005,2026-03-01 00:15,1,kWh,220,1\n" + // no offset
		"50000000005,2026-03-01T00:30:00Z,1.0000001,kWh,220,1\n" // seven places
	d, err := NewDecoder(strings.NewReader(in), CSV, table)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for {
		_, err := d.Next()
		if err == io.EOF {
			break
		}
		var le *LineError
		if errors.As(err, &le) {
			lines = append(lines, le.Error())
		}
	}
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "line 3: from:") || !strings.HasPrefix(lines[1], "line 4: value:") {
		t.Errorf("errors: %q", lines)
	}
	if _, err := NewDecoder(strings.NewReader("malo_id,colour\n"), CSV, table); err == nil || !strings.Contains(err.Error(), "colour") {
		t.Errorf("unknown column: %v", err)
	}
	d, _ = NewDecoder(strings.NewReader(`{"malo_id": true}`+"\n"), JSONLines, table)
	if _, err := d.Next(); err == nil || !strings.Contains(err.Error(), "line 1: malo_id") {
		t.Errorf("a boolean id: %v", err)
	}
}

// TestRunBatches: a batch with a bad line writes nothing, the batches
// before it stay written, and the error names the line.
func TestRunBatches(t *testing.T) {
	var b strings.Builder
	b.WriteString("malo_id,from,value,unit,quality,version\n")
	for i := range 25 {
		v := "1"
		if i == 17 {
			v = "x"
		}
		b.WriteString("50000000005," + time.Date(2026, 3, 1, 0, 15*i, 0, 0, time.UTC).Format(time.RFC3339) + "," + v + ",kWh,220,1\n")
	}
	d, err := NewDecoder(strings.NewReader(b.String()), CSV, table)
	if err != nil {
		t.Fatal(err)
	}
	var written [][]series.Reading
	write := func(_ context.Context, rows []series.Reading) ([]series.Status, int, error) {
		written = append(written, rows)
		st := make([]series.Status, len(rows))
		for i := range st {
			st[i] = series.Inserted
		}
		return st, 0, nil
	}
	sum, err := Run(t.Context(), d, write, Options{BatchRows: 10})
	var be *BatchError
	if !errors.As(err, &be) || be.FirstLine != 12 || be.LastLine != 21 || len(be.Lines) != 1 || be.Lines[0].Line != 19 {
		t.Fatalf("error %v", err)
	}
	if len(written) != 1 || sum.Inserted != 10 || sum.Through != 11 {
		t.Errorf("written %d batches, summary %+v", len(written), sum)
	}
}

// TestDecodeCSVQuoteErrors: a quote error, in the first column or any
// other, is a *LineError naming the line, and the batches before it stay
// counted as written.
func TestDecodeCSVQuoteErrors(t *testing.T) {
	const header = "malo_id,from,value,unit,quality,version\n"
	const good = "50000000005,2026-03-01T00:00:00Z,1,kWh,220,1\n"
	for _, c := range []struct {
		name, in string
		line     int
	}{
		{"bare quote in the first column", header + good + `500"00000005,2026-03-01T00:15:00Z,1,kWh,220,1` + "\n", 3},
		{"unterminated quote in the first column", header + good + `"50000000005,2026-03-01T00:15:00Z,1,kWh,220,1` + "\n" + good, 3},
		{"bare quote in a later column", header + good + `50000000005,2026-03-01T00:15:00Z,1,k"Wh,220,1` + "\n", 3},
	} {
		t.Run(c.name, func(t *testing.T) {
			d, err := NewDecoder(strings.NewReader(c.in), CSV, table)
			if err != nil {
				t.Fatal(err)
			}
			sum, err := Run(t.Context(), d, writeAll(nil), Options{BatchRows: 1})
			var be *BatchError
			if !errors.As(err, &be) || len(be.Lines) != 1 || be.Lines[0].Line != c.line || be.FirstLine != c.line {
				t.Fatalf("error %v", err)
			}
			if sum.Through != 2 || sum.Inserted != 1 {
				t.Errorf("summary %+v", sum)
			}
		})
	}
}

// writeAll returns a WriteFunc that inserts every row and appends each
// batch to *written, if written is not nil.
func writeAll(written *[][]series.Reading) WriteFunc {
	return func(_ context.Context, rows []series.Reading) ([]series.Status, int, error) {
		if written != nil {
			*written = append(*written, rows)
		}
		st := make([]series.Status, len(rows))
		for i := range st {
			st[i] = series.Inserted
		}
		return st, 0, nil
	}
}

// TestRunBatchBounds: a batch size past MaxBatchRows, or negative, is
// refused before anything is read, rather than allocated.
func TestRunBatchBounds(t *testing.T) {
	for _, n := range []int{-1, MaxBatchRows + 1, 9_000_000_000_000_000_000} {
		d, err := NewDecoder(strings.NewReader("malo_id,from,value,unit,quality,version\n"), CSV, table)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Run(t.Context(), d, writeAll(nil), Options{BatchRows: n}); err == nil || !strings.Contains(err.Error(), "batch") {
			t.Errorf("BatchRows %d: %v", n, err)
		}
	}
	d, _ := NewDecoder(strings.NewReader("malo_id,from,value,unit,quality,version\n50000000005,2026-03-01T00:00:00Z,1,kWh,220,1\n"), CSV, table)
	if sum, err := Run(t.Context(), d, writeAll(nil), Options{BatchRows: MaxBatchRows}); err != nil || sum.Inserted != 1 {
		t.Errorf("BatchRows MaxBatchRows: %+v, %v", sum, err)
	}
}

// TestDecodeDuplicateColumns: a column named twice, in a CSV header or as
// a key of a JSON object, is refused with its line and name: which of the
// values was meant cannot be told.
func TestDecodeDuplicateColumns(t *testing.T) {
	_, err := NewDecoder(strings.NewReader("malo_id,from,value,unit,quality,version, malo_id\n"), CSV, table)
	var le *LineError
	if !errors.As(err, &le) || le.Line != 1 || le.Column != "malo_id" || !strings.Contains(err.Error(), "twice") {
		t.Errorf("CSV header: %v", err)
	}
	in := `{"malo_id":"50000000005","from":"2026-03-01T00:00:00Z","value":"1","unit":"kWh","quality":"220","version":1}` + "\n" +
		`{"malo_id":"50000000005","from":"2026-03-01T00:15:00Z","value":"1","unit":"kWh","quality":"220","version":1,"value":"2"}` + "\n"
	d, err := NewDecoder(strings.NewReader(in), JSONLines, table)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Next(); err != nil {
		t.Fatal(err)
	}
	_, err = d.Next()
	if !errors.As(err, &le) || le.Line != 2 || le.Column != "value" || !strings.Contains(err.Error(), "twice") {
		t.Errorf("JSON object: %v", err)
	}
	// The same name spelled with an escape is the same key.
	d, _ = NewDecoder(strings.NewReader(`{"unit":"kWh","\u0075nit":"MWh"}`+"\n"), JSONLines, table)
	if _, err := d.Next(); !errors.As(err, &le) || le.Line != 1 || le.Column != "unit" {
		t.Errorf("JSON object with an escaped key: %v", err)
	}
}

// TestDecodeJSONObjects: a line must be one JSON object.
func TestDecodeJSONObjects(t *testing.T) {
	for _, in := range []string{`null`, `[1]`, `"x"`, `{"unit":"kWh"} {}`, `{"unit":"kWh"}x`, `{"unit" "kWh"}`, `{"unit":}`} {
		d, err := NewDecoder(strings.NewReader("\n"+in+"\n"), JSONLines, table)
		if err != nil {
			t.Fatal(err)
		}
		var le *LineError
		if _, err := d.Next(); !errors.As(err, &le) || le.Line != 2 {
			t.Errorf("%s: %v", in, err)
		}
	}
}

// TestDecodeLineEnds: a delivery reads the same, records and lines, with
// LF, CR LF or CR alone (classic Mac OS, older Excel for Mac) as line ends,
// and with a mix of them; a bad record is named by its line.
func TestDecodeLineEnds(t *testing.T) {
	lines := []string{
		"malo_id,from,value,unit,quality,version",
		"50000000005,2026-03-01T00:00:00Z,1,kWh,220,1",
		"",
		"50000000005,2026-03-01T00:15:00Z,x,kWh,220,1",
		"50000000005,2026-03-01T00:30:00Z,3,kWh,220,1",
	}
	jsonLines := []string{
		`{"malo_id":"50000000005","from":"2026-03-01T00:00:00Z","value":"1","unit":"kWh","quality":"220","version":1}`,
		"",
		`{"malo_id":"50000000005","from":"2026-03-01T00:15:00Z","value":"x","unit":"kWh","quality":"220","version":1}`,
		`{"malo_id":"50000000005","from":"2026-03-01T00:30:00Z","value":"3","unit":"kWh","quality":"220","version":1}`,
	}
	for _, c := range []struct {
		name string
		f    Format
		in   string
		want string
	}{
		{"CSV, LF", CSV, strings.Join(lines, "\n") + "\n", "2 ok; 4 line 4: value; 5 ok"},
		{"CSV, CR LF", CSV, strings.Join(lines, "\r\n") + "\r\n", "2 ok; 4 line 4: value; 5 ok"},
		{"CSV, CR", CSV, strings.Join(lines, "\r") + "\r", "2 ok; 4 line 4: value; 5 ok"},
		{"CSV, CR without a last line end", CSV, strings.Join(lines, "\r"), "2 ok; 4 line 4: value; 5 ok"},
		{"CSV, mixed", CSV, lines[0] + "\r" + lines[1] + "\r\n" + lines[2] + "\n" + lines[3] + "\r" + lines[4], "2 ok; 4 line 4: value; 5 ok"},
		{"JSON lines, CR", JSONLines, strings.Join(jsonLines, "\r") + "\r", "1 ok; 3 line 3: value; 4 ok"},
	} {
		// A byte at a time, every CR is the last byte of a read.
		for _, r := range []io.Reader{strings.NewReader(c.in), iotest.OneByteReader(strings.NewReader(c.in))} {
			d, err := NewDecoder(r, c.f, table)
			if err != nil {
				t.Fatalf("%s: %q", c.name, err)
			}
			var got []string
			for range 10 {
				rec, err := d.Next()
				if err == io.EOF {
					break
				}
				s := fmt.Sprint(rec.Line, " ok")
				if le := (*LineError)(nil); errors.As(err, &le) {
					s = fmt.Sprintf("%d line %d: %s", rec.Line, le.Line, le.Column)
				} else if err != nil {
					s = fmt.Sprintf("%d %q", rec.Line, err)
				}
				got = append(got, s)
			}
			if strings.Join(got, "; ") != c.want {
				t.Errorf("%s, %T: got %q; want %q", c.name, r, strings.Join(got, "; "), c.want)
			}
		}
	}
}

// TestDecodeErrorsEscapeNames: a column a delivery names is shown in an
// error as written if it is plain text, else quoted with its control
// characters escaped, and cut short if it is long: an error never carries
// a raw carriage return or a whole delivery.
func TestDecodeErrorsEscapeNames(t *testing.T) {
	long := strings.Repeat("y", 10_000)
	for _, c := range []struct {
		f          Format
		in, column string
	}{
		{CSV, "malo_id,colour\n", "colour"},
		{CSV, "malo_id,col\x01our\n", `"col\x01our"`},
		{CSV, "malo_id,\"col\rour\"\n", `"col\nour"`}, // a CR alone ends a line, in quotes too
		{CSV, "malo_id," + long + "\n", `"` + long[:64] + `"...`},
		{JSONLines, `{"col\u000dour":"red"}` + "\n", `"col\rour"`},
		{JSONLines, `{"col\"our":"red"}` + "\n", `"col\"our"`},
	} {
		d, err := NewDecoder(strings.NewReader(c.in), c.f, table)
		if err == nil {
			_, err = d.Next()
		}
		if want := "line 1: " + c.column + ": no such column"; err == nil || err.Error() != want {
			t.Errorf("%q: %q; want %q", c.in[:min(len(c.in), 40)], err, want)
		}
	}
}

// TestDecodeBOM: a UTF-8 byte order mark before the first line, as some
// spreadsheets write, is not part of the first column's name.
func TestDecodeBOM(t *testing.T) {
	for _, c := range []struct {
		f  Format
		in string
	}{
		{CSV, "\ufeffmalo_id,from,value,unit,quality,version\n50000000005,2026-03-01T00:00:00Z,1,kWh,220,1\n"},
		{JSONLines, "\ufeff" + `{"malo_id":"50000000005","from":"2026-03-01T00:00:00Z","value":"1","unit":"kWh","quality":"220","version":1}` + "\n"},
	} {
		d, err := NewDecoder(strings.NewReader(c.in), c.f, table)
		if err != nil {
			t.Errorf("format %d: %v", c.f, err)
			continue
		}
		if rec, err := d.Next(); err != nil || rec.Reading.MaLo != "50000000005" {
			t.Errorf("format %d: %+v, %v", c.f, rec, err)
		}
	}
}

// TestRunRefusalNamesLines: the rows a refused batch names, and the rows
// its reasons refer to, are given as the file's lines.
func TestRunRefusalNamesLines(t *testing.T) {
	var b strings.Builder
	b.WriteString("malo_id,from,value,unit,quality,version\n")
	for i := range 6 {
		b.WriteString("50000000005," + time.Date(2026, 3, 1, 0, 15*i, 0, 0, time.UTC).Format(time.RFC3339) + ",1,kWh,220,1\n")
		if i == 1 {
			b.WriteString("\n") // a blank line, which is not a record
		}
	}
	d, err := NewDecoder(strings.NewReader(b.String()), CSV, table)
	if err != nil {
		t.Fatal(err)
	}
	// The first batch is lines 2, 3 and 5, the second 6, 7 and 8; its row
	// 2 (line 8) restates its row 0 (line 6). The reason is the hot tier's.
	calls := 0
	write := func(_ context.Context, rows []series.Reading) ([]series.Status, int, error) {
		if calls++; calls == 2 {
			return nil, 0, &series.Error{Kind: series.IntegrityViolation, Op: "write", Table: "power", Rows: []int{2},
				Problems: []series.Problem{{Row: 2, Reason: "restates row 0 under version 1 with a different value"}}}
		}
		return writeAll(nil)(t.Context(), rows)
	}
	_, err = Run(t.Context(), d, write, Options{BatchRows: 3})
	var be *BatchError
	if !errors.As(err, &be) || be.FirstLine != 6 || be.LastLine != 8 || len(be.Lines) != 1 || be.Lines[0].Line != 8 {
		t.Fatalf("error %v", err)
	}
	if got, want := be.Lines[0].Error(), "line 8: restates line 6 under version 1 with a different value"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

package ingest

import (
	"errors"
	"io"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const (
	fuzzHeader = "malo_id,obis_code,from,to,value,unit,quality,resolution,version,version_scope,channel\n"
	fuzzRow    = "50000000005,1-1:1.29.0,2026-03-29T01:45:00+01:00,2026-03-29T03:00:00+02:00,1.250,kWh,220,PT15M,20260330000000,9900000000003:2026-03,A\n"
	fuzzObject = `{"malo_id":"50000000005","obis_code":"1-1:1.29.0","from":"2026-03-29T01:45:00+01:00","to":"2026-03-29T03:00:00+02:00",` +
		`"value":1.250,"unit":"kWh","quality":"220","resolution":"PT15M","version":20260330000000,"version_scope":"9900000000003:2026-03","channel":"A"}` + "\n"
)

// namesALine matches an error message that names a line.
var namesALine = regexp.MustCompile(`\bline [1-9][0-9]*\b`)

// controlChar matches a control character, which an error message must
// not carry raw: a carriage return from a delivery would overwrite the
// message on a terminal.
var controlChar = regexp.MustCompile(`[\x00-\x1f\x7f]`)

// decodeAll decodes in to the end and fails t if decoding panics, does
// not end, or refuses anything without naming its line or with a control
// character in the message.
func decodeAll(t *testing.T, in string, f Format) {
	d, err := NewDecoder(strings.NewReader(in), f, table)
	if err != nil {
		if !namesALine.MatchString(err.Error()) {
			t.Fatalf("NewDecoder: %v: names no line", err)
		}
		if controlChar.MatchString(err.Error()) {
			t.Fatalf("NewDecoder: %q: a control character in the message", err)
		}
		return
	}
	last := 0
	// Every record, good or bad, takes at least one byte of the input.
	for range len(in) + 2 {
		rec, err := d.Next()
		if err == io.EOF {
			return
		}
		if err != nil && controlChar.MatchString(err.Error()) {
			t.Fatalf("%q: a control character in the message", err)
		}
		var le *LineError
		switch {
		case errors.As(err, &le):
			if le.Line < 1 || le.Line != rec.Line {
				t.Fatalf("line %d, record line %d: %v", le.Line, rec.Line, err)
			}
		case err != nil:
			if !namesALine.MatchString(err.Error()) {
				t.Fatalf("%v: names no line", err)
			}
			return // the input cannot be read further
		}
		if rec.Line <= last {
			t.Fatalf("record at line %d after one at line %d", rec.Line, last)
		}
		last = rec.Line
	}
	t.Fatalf("no end after %d records", len(in)+2)
}

// csvSeeds are deliveries the CSV fuzz targets start from.
var csvSeeds = []string{
	fuzzHeader + fuzzRow,
	fuzzHeader + fuzzRow + "\n\n" + fuzzRow,
	fuzzHeader + strings.Replace(fuzzRow, ",A\n", ",\"A\nB\"\n", 1) + fuzzRow, // a field across lines
	fuzzHeader,
	"",
	"\n\n" + fuzzHeader + fuzzRow,
	fuzzHeader + `ab"c,1-1:1.29.0,2026-03-29T01:45:00+01:00,,1,kWh,220,,1,,A` + "\n",
	fuzzHeader + `"50000000005,1-1:1.29.0,2026-03-29T01:45:00+01:00,,1,kWh,220,,1,,A` + "\n" + fuzzRow,
	fuzzHeader + fuzzRow + "50000000005,1\n",
	"malo_id,from,value,unit,quality,version,malo_id\n",
	"\ufeff" + fuzzHeader + fuzzRow,
	"\ufeffmalo_id,\ufeffcolour\n",
	fuzzHeader + strings.Replace(fuzzRow, "1.250", "1.0000001", 1),
	fuzzHeader + strings.Replace(fuzzRow, "2026-03-29T01:45:00+01:00", "2026-03-29 01:45", 1),
	strings.ReplaceAll(fuzzHeader+fuzzRow+fuzzRow, "\n", "\r"),                                      // classic Mac OS line ends
	strings.ReplaceAll(fuzzHeader+fuzzRow, "\n", "\r\n") + strings.TrimSuffix(fuzzRow, "\n") + "\r", // CR LF, then a CR at the end
	"malo_id,\x01colour\x7f,from\n" + fuzzRow,
	// For plainCSV: rows around a quoted one, a header across lines, a
	// short row, blank lines, and no line feed at the end.
	fuzzHeader + fuzzRow + strings.Replace(fuzzRow, ",A\n", ",\"A\"\n", 1) + fuzzRow + "\r\n\n" + strings.TrimSuffix(fuzzRow, "\n"),
	strings.Replace(fuzzHeader, "channel", "\"chan\nnel\"", 1) + fuzzRow + fuzzRow,
	fuzzHeader + fuzzRow + "50000000005,1\n" + fuzzRow + `"x` + "\n" + fuzzRow,
}

func FuzzDecodeCSV(f *testing.F) {
	for _, s := range csvSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) { decodeAll(t, in, CSV) })
}

// FuzzDecodeCSVPlain: with plainCSV reading the lines it can, a delivery
// decodes to the same records and errors, on the same lines, as with the
// CSV reader reading every record.
func FuzzDecodeCSVPlain(f *testing.F) {
	for _, s := range csvSeeds {
		f.Add(s)
	}
	// Lines longer than plainCSV's buffer, between ordinary ones.
	long := strings.Replace(fuzzRow, ",A\n", ","+strings.Repeat("A", plainBuffer+10)+"\n", 1)
	f.Add(fuzzHeader + fuzzRow + long + fuzzRow + long)
	f.Fuzz(func(t *testing.T, in string) {
		want, wantErrs := decodeWith(t, in, true)
		got, gotErrs := decodeWith(t, in, false)
		if !reflect.DeepEqual(got, want) || !slices.Equal(gotErrs, wantErrs) {
			t.Fatalf("plainCSV on:\n%q\nrecords %+v\nerrors %q\nthe CSV reader alone:\nrecords %+v\nerrors %q", in, got, gotErrs, want, wantErrs)
		}
	})
}

// decodeWith decodes in as CSV, with or without plainCSV, and returns
// every record and every error's message, in order.
func decodeWith(t *testing.T, in string, slow bool) ([]Record, []string) {
	var (
		recs []Record
		errs []string
	)
	d, err := NewDecoder(strings.NewReader(in), CSV, table)
	if err != nil {
		return nil, []string{err.Error()}
	}
	d.slow = slow
	for range len(in) + 2 {
		rec, err := d.Next()
		if err == io.EOF {
			return recs, errs
		}
		recs = append(recs, rec)
		if err != nil {
			errs = append(errs, err.Error())
			if !errors.As(err, new(*LineError)) {
				return recs, errs
			}
		}
	}
	t.Fatalf("no end after %d records", len(in)+2)
	return nil, nil
}

func FuzzDecodeJSONLines(f *testing.F) {
	for _, s := range []string{
		fuzzObject,
		"\n" + fuzzObject + "\n  \n" + fuzzObject,
		"",
		"\ufeff" + fuzzObject,
		strings.Replace(fuzzObject, `"channel":"A"`, `"channel":"A","value":"2"`, 1),
		`{"unit":"kWh","\u0075nit":"MWh"}` + "\n",
		`{"malo_id": true}` + "\n",
		`{"malo_id":"50000000005"` + "\n" + fuzzObject,
		`{"unit":"kWh"} {}` + "\n",
		"null\n[1]\n\"x\"\n{}\n",
		`{"value":{"a":1,"a":2}}` + "\n",
		`{"colour":"red"}` + "\n",
		strings.Replace(fuzzObject, "1.250", "1e400", 1),
		strings.ReplaceAll(fuzzObject+fuzzObject, "\n", "\r"),
		`{"col\u000dour":"red"}` + "\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) { decodeAll(t, in, JSONLines) })
}

package ingest

import (
	"bytes"
	"encoding/csv"
	"strings"
)

// plainBuffer is the size of the buffer plainCSV reads lines from: a line
// not wholly in it is left to the CSV reader.
const plainBuffer = 64 << 10

// plainCSV reads the next record the way the CSV reader would, when it is
// a whole line in the buffer without a quote: most lines of a delivery.
// It returns the fields and the line, or nil fields and no error when the
// record is the CSV reader's to read (a quote, a line not yet buffered or
// without its line feed, the end). The fields are valid until the next
// call, as the CSV reader's with ReuseRecord.
func (d *Decoder) plainCSV() ([]string, int, error) {
	if d.slow {
		return nil, 0, nil
	}
	for {
		buf, _ := d.plain.Peek(d.plain.Buffered())
		nl := bytes.IndexByte(buf, '\n')
		if nl < 0 {
			return nil, 0, nil
		}
		text := buf[:nl]
		if bytes.IndexByte(text, '"') >= 0 {
			return nil, 0, nil
		}
		// crLines left a CR only before a line feed; the CSV reader
		// drops it with the line feed.
		text = bytes.TrimSuffix(text, []byte{'\r'})
		d.skipped++
		d.line++
		line := d.line
		if len(text) == 0 {
			// The CSV reader skips a blank line.
			d.plain.Discard(nl + 1)
			continue
		}
		// One string for the line, the fields slices of it, as the CSV
		// reader does.
		str := string(text)
		d.plain.Discard(nl + 1)
		d.fields = d.fields[:0]
		for {
			i := strings.IndexByte(str, ',')
			if i < 0 {
				d.fields = append(d.fields, str)
				break
			}
			d.fields = append(d.fields, str[:i])
			str = str[i+1:]
		}
		if n := d.csv.FieldsPerRecord; n > 0 && len(d.fields) != n {
			return nil, line, &csv.ParseError{StartLine: line, Line: line, Column: 1, Err: csv.ErrFieldCount}
		}
		return d.fields, line, nil
	}
}

// readCSV reads the next record with the CSV reader and returns it and
// its first line, numbering lines from the top of the delivery: the CSV
// reader numbers only the lines it read.
func (d *Decoder) readCSV() ([]string, int, error) {
	fields, err := d.csv.Read()
	if pe, ok := err.(*csv.ParseError); ok {
		moved := *pe
		moved.StartLine += d.skipped
		moved.Line += d.skipped
		// The reader goes on after the line the error is on, or after
		// the whole record when only its field count is wrong.
		d.line = moved.Line
		if pe.Err == csv.ErrFieldCount {
			d.line = endLine(d.csv, fields) + d.skipped
		}
		return nil, moved.StartLine, &moved
	}
	if err != nil {
		return nil, 0, err
	}
	line, _ := d.csv.FieldPos(0)
	d.line = endLine(d.csv, fields) + d.skipped
	return fields, line + d.skipped, nil
}

// endLine returns the line the record fields, just read by r, ends on:
// where its last field starts, and one more for each line break in it (a
// quoted field keeps them, each as a line feed).
func endLine(r *csv.Reader, fields []string) int {
	last := len(fields) - 1
	line, _ := r.FieldPos(last)
	return line + strings.Count(fields[last], "\n")
}

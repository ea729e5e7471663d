package pgwire

import (
	"bytes"
	"regexp"
	"strings"

	"github.com/jackc/pgx/v5/pgproto3"
)

// copyQuery matches COPY (query) TO STDOUT [options]: the last ")"
// before TO STDOUT closes the query.
var copyQuery = regexp.MustCompile(`(?is)^\s*copy\s*\((.*)\)\s*to\s+stdout\b(.*)$`)

// copyFormat is how COPY writes rows: CSV or PostgreSQL's text format.
type copyFormat struct {
	csv       bool
	header    bool
	delimiter byte
	null      string
}

// copyOut answers COPY (SELECT ...) TO STDOUT in the text or CSV format,
// as psql's \copy (...) to stdout sends it; every other COPY is refused.
func (s *session) copyOut(sql string) {
	m := copyQuery.FindStringSubmatch(sql)
	if m == nil {
		if regexp.MustCompile(`(?is)\bfrom\s+(stdin|'|")`).MatchString(sql) {
			s.fail(errorf(codeReadOnly, "COPY FROM is refused: MeterStore takes readings through its ingest API, statements are read-only"))
			return
		}
		s.fail(errorf(codeFeatureNotSupported, "only COPY (SELECT ...) TO STDOUT is supported: name the table in the SELECT"))
		return
	}
	f, err := copyOptions(m[2])
	if err != nil {
		s.fail(err)
		return
	}
	c := s.run(s.storeSource(m[1], nil, nil))
	defer c.close()
	fields, err := c.describe()
	if err != nil {
		s.fail(err)
		return
	}
	s.send(&pgproto3.CopyOutResponse{OverallFormat: 0, ColumnFormatCodes: make([]uint16, len(fields))})
	var line bytes.Buffer
	if f.header {
		names := make([][]byte, len(fields))
		for i, fd := range fields {
			names[i] = fd.Name
		}
		f.write(&line, names)
		s.send(&pgproto3.CopyData{Data: line.Bytes()})
	}
	_, err = s.pipe(c, 0, func(r [][]byte) int {
		line.Reset()
		f.write(&line, r)
		s.send(&pgproto3.CopyData{Data: line.Bytes()}) // encoded at once
		return line.Len()
	})
	if err != nil {
		s.fail(err)
		return
	}
	s.send(&pgproto3.CopyDone{})
	s.send(&pgproto3.CommandComplete{CommandTag: []byte("COPY " + strings.TrimPrefix(c.tag, "SELECT "))})
}

// copyOptions reads COPY's options: WITH (FORMAT csv, HEADER, ...) or
// the older CSV HEADER form; BINARY is refused.
func copyOptions(s string) (copyFormat, error) {
	f := copyFormat{delimiter: '\t', null: `\N`}
	toks, ok := lex(s)
	if ok {
		toks, ok = oneStatement(toks)
	}
	if !ok {
		return f, errorf(codeSyntaxError, "syntax error in COPY's options")
	}
	if len(toks) > 0 && toks[0].is("with") {
		toks = toks[1:]
	}
	depth := 0
	for _, t := range toks {
		switch {
		case t.quoted:
		case t.text == "(":
			depth++
		case t.text == ")":
			depth--
		}
		if depth < 0 || depth > 1 {
			break
		}
	}
	if depth != 0 {
		return f, errorf(codeSyntaxError, "syntax error in COPY's options: unbalanced parentheses")
	}
	delimiterSet, nullSet := false, false
	for i := 0; i < len(toks); i++ {
		t := toks[i]
		arg := func() (string, bool) {
			if i+1 < len(toks) && toks[i+1].text != "," && toks[i+1].text != ")" {
				i++
				return toks[i].text, true
			}
			return "", false
		}
		switch {
		case t.text == "(" || t.text == ")" || t.text == ",":
		case t.is("format"):
			v, _ := arg()
			switch strings.ToLower(v) {
			case "csv":
				f.csv = true
			case "text":
			default:
				return f, errorf(codeFeatureNotSupported, "COPY format %q is not supported: csv or text", v)
			}
		case t.is("csv"):
			f.csv = true
		case t.is("binary"):
			return f, errorf(codeFeatureNotSupported, "COPY's binary format is not supported: csv or text")
		case t.is("header"):
			if v, ok := arg(); ok && !strings.EqualFold(v, "true") && !strings.EqualFold(v, "on") && v != "1" {
				f.header = false
				continue
			}
			f.header = true
		case t.is("delimiter"):
			v, _ := arg()
			if len(v) != 1 {
				return f, errorf(codeFeatureNotSupported, "COPY delimiter must be a single one-byte character")
			}
			f.delimiter, delimiterSet = v[0], true
		case t.is("null"):
			v, _ := arg()
			f.null, nullSet = v, true
		default:
			return f, errorf(codeFeatureNotSupported, "COPY option %q is not supported", t.text)
		}
	}
	if f.csv && !delimiterSet {
		f.delimiter = ','
	}
	if f.csv && !nullSet {
		f.null = ""
	}
	return f, nil
}

// write appends row, text values with nil for NULL, as one line of f.
func (f copyFormat) write(b *bytes.Buffer, row [][]byte) {
	for i, v := range row {
		if i > 0 {
			b.WriteByte(f.delimiter)
		}
		switch {
		case v == nil:
			b.WriteString(f.null)
		case f.csv:
			f.csvField(b, v)
		default:
			f.textField(b, v)
		}
	}
	b.WriteByte('\n')
}

// csvField appends v quoted as CSV needs: a value holding the delimiter,
// a quote or a line break, or equal to the NULL string, is quoted.
func (f copyFormat) csvField(b *bytes.Buffer, v []byte) {
	if !bytes.ContainsAny(v, string([]byte{f.delimiter, '"', '\n', '\r'})) && string(v) != f.null {
		b.Write(v)
		return
	}
	b.WriteByte('"')
	b.Write(bytes.ReplaceAll(v, []byte(`"`), []byte(`""`)))
	b.WriteByte('"')
}

// textField appends v escaped as the text format escapes it.
func (f copyFormat) textField(b *bytes.Buffer, v []byte) {
	for _, c := range v {
		switch c {
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if c == f.delimiter {
				b.WriteByte('\\')
			}
			b.WriteByte(c)
		}
	}
}

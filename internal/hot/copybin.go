package hot

import (
	"cmp"
	"context"
	"encoding/binary"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/meterstore/meterstore/internal/hot/pgnum"
	"github.com/meterstore/meterstore/series"
)

// The direct copy in binary, encoded ahead.
//
// pgx encodes a COPY value by value, looking up an encode plan for each
// through reflection: a quarter of the client's time in a write of the
// dictionary layout. Its rows have eight columns of fixed types, so the
// tier encodes them itself, in COPY's binary format, and can do so before
// the write's transaction: the two ids, known only once the dictionaries
// have been read, have a fixed place in each row and are filled in then.
// WriteEach encodes a batch while the one before it is being written.

// copySignature begins COPY's binary format: the signature, no flags, no
// header extension.
const copySignature = "PGCOPY\n\xff\r\n\x00" + "\x00\x00\x00\x00" + "\x00\x00\x00\x00"

// pgEpoch is PostgreSQL's epoch for timestamps and dates, in Unix seconds.
const pgEpoch = 946684800

// An encoded batch is its rows in COPY's binary format for the direct copy
// into a table of the dictionary layout (dictLayout.writeColumns).
type encoded struct {
	buf []byte
	at  []int // where each row's series id begins; its attr id follows 8 bytes on
}

// binaryDirect reports whether the rows of t in layout l may be copied
// from an encoded batch: the dictionary layout without attribute columns,
// whose types the encoder does not know.
func binaryDirect(t *series.Table, l layout) bool {
	switch l.(type) {
	case dictLayout, leanLayout, stepLayout:
	default:
		return false
	}
	for _, c := range t.Columns {
		if !c.Identity {
			return false
		}
	}
	return true
}

// encodeDirect encodes rows in the columns of l.writeColumns, l being
// one of the dictionary layouts, with room for their ids, which it does
// not read: the write may be finding them meanwhile. It encodes into e
// if not nil, an encoding no longer read.
func encodeDirect(t *series.Table, l layout, rows []staged, e *encoded) *encoded {
	switch l.(type) {
	case leanLayout:
		return encodeLean(rows, 0, e)
	case stepLayout:
		return encodeLean(rows, stepSeconds(t)*1e6, e)
	}
	e = e.reset(len(rows), 112)
	b := append(e.buf, copySignature...)
	for i := range rows {
		r := &rows[i]
		b = binary.BigEndian.AppendUint16(b, 8)
		e.at[i] = len(b) + 4
		b = appendInt32(b, 0) // the ids, filled in by setIDs
		b = appendInt32(b, 0)
		b = appendTime(b, r.from)
		b = appendTime(b, r.to)
		b = appendField(b, func(b []byte) []byte { return pgnum.AppendMicro(b, r.value) })
		b = binary.BigEndian.AppendUint32(b, uint32(len(r.quality)))
		b = append(b, r.quality...)
		b = appendField(b, func(b []byte) []byte { return pgnum.AppendUint(b, r.version) })
		b = binary.BigEndian.AppendUint32(b, 4)
		b = binary.BigEndian.AppendUint32(b, uint32(int32((r.day.Unix()-pgEpoch)/86400)))
	}
	e.buf = binary.BigEndian.AppendUint16(b, 0xffff)
	return e
}

// encodeLean encodes rows in the columns of leanLayout.writeColumns, or
// of stepLayout.writeColumns where step, the length of the table's step
// in microseconds, is not 0; into e if not nil.
func encodeLean(rows []staged, step int64, e *encoded) *encoded {
	e = e.reset(len(rows), 64)
	b := append(e.buf, copySignature...)
	for i := range rows {
		r := &rows[i]
		b = binary.BigEndian.AppendUint16(b, 5)
		e.at[i] = len(b) + 4
		b = appendInt32(b, 0) // the ids, filled in by setIDs
		b = appendInt32(b, 0)
		if step != 0 {
			// Write checked that from is on the grid.
			b = appendInt32(b, int32(r.from.UnixMicro()/step))
		} else {
			b = appendTime(b, r.from)
		}
		b = binary.BigEndian.AppendUint32(b, 8)
		b = binary.BigEndian.AppendUint64(b, uint64(versionBiased(uint64(r.version))))
		b = appendField(b, func(b []byte) []byte { return pgnum.AppendMicro(b, r.value) })
	}
	e.buf = binary.BigEndian.AppendUint16(b, 0xffff)
	return e
}

// reset returns e emptied for n rows of about perRow bytes each, or a new
// encoding if e is nil or too small.
func (e *encoded) reset(n, perRow int) *encoded {
	size := len(copySignature) + n*perRow + 2
	if e == nil || cap(e.buf) < size || cap(e.at) < n {
		return &encoded{buf: make([]byte, 0, size), at: make([]int, n)}
	}
	e.buf, e.at = e.buf[:0], e.at[:n]
	return e
}

// setIDs fills in the ids of rows, which e encodes.
func (e *encoded) setIDs(rows []staged) {
	for i := range rows {
		binary.BigEndian.PutUint32(e.buf[e.at[i]:], uint32(rows[i].series))
		binary.BigEndian.PutUint32(e.buf[e.at[i]+8:], uint32(rows[i].attr))
	}
}

// keyOrder returns e's rows in the order of the primary key, series id
// first. Series ids follow the dictionary's key order, not the batch's,
// and rows copied out of key order land in the middle of the index's
// pages and split them half full; in key order a batch's new series go
// to the rightmost pages, which splits leave full. Rows come in runs of
// one series and version whose starts ascend, and the runs are sorted:
// only two versions of a series in one batch are then not quite in key
// order, which costs the index a little room, never a row.
func (e *encoded) keyOrder(rows []staged) io.Reader {
	type run struct {
		series     int32
		from       int64
		v          uint64
		first, end int // rows[first:end]
	}
	var runs []run
	sorted := true
	for i := range rows {
		r := &rows[i]
		if n := len(runs); n > 0 {
			p := &runs[n-1]
			if p.series == r.series && p.v == uint64(r.version) && rows[i-1].from.Before(r.from) {
				p.end = i + 1
				continue
			}
			sorted = sorted && (p.series < r.series || p.series == r.series && rows[p.first].from.Before(r.from))
		}
		runs = append(runs, run{series: r.series, from: r.from.UnixMicro(), v: uint64(r.version), first: i, end: i + 1})
	}
	if sorted {
		return &segments{e.buf}
	}
	slices.SortFunc(runs, func(a, b run) int {
		if c := cmp.Compare(a.series, b.series); c != 0 {
			return c
		}
		if c := cmp.Compare(a.from, b.from); c != 0 {
			return c
		}
		return cmp.Compare(a.v, b.v)
	})
	// A row begins with its field count and the series id's length, 6
	// bytes before the id; a run ends where the row after it begins.
	out := make(segments, 0, len(runs)+2)
	out = append(out, e.buf[:len(copySignature)])
	for _, r := range runs {
		end := len(e.buf) - 2
		if r.end < len(rows) {
			end = e.at[r.end] - 6
		}
		out = append(out, e.buf[e.at[r.first]-6:end])
	}
	out = append(out, e.buf[len(e.buf)-2:])
	return &out
}

// segments reads byte slices one after the other: keyOrder's runs, read
// in key order where they lie in the batch's, without copying them.
type segments [][]byte

func (s *segments) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) && len(*s) > 0 {
		k := copy(p[n:], (*s)[0])
		n += k
		if (*s)[0] = (*s)[0][k:]; len((*s)[0]) == 0 {
			*s = (*s)[1:]
		}
	}
	if n == 0 && len(p) > 0 {
		return 0, io.EOF
	}
	return n, nil
}

func appendInt32(b []byte, v int32) []byte {
	b = binary.BigEndian.AppendUint32(b, 4)
	return binary.BigEndian.AppendUint32(b, uint32(v))
}

func appendTime(b []byte, t time.Time) []byte {
	b = binary.BigEndian.AppendUint32(b, 8)
	return binary.BigEndian.AppendUint64(b, uint64(t.UnixMicro()-pgEpoch*1_000_000))
}

// appendField appends the value enc appends, after its length.
func appendField(b []byte, enc func([]byte) []byte) []byte {
	at := len(b)
	b = enc(append(b, 0, 0, 0, 0))
	binary.BigEndian.PutUint32(b[at:], uint32(len(b)-at-4))
	return b
}

// copyEncoded copies b's encoded rows into t's parent, in tx.
func (h *Tier) copyEncoded(ctx context.Context, tx pgx.Tx, t *series.Table, l layout, b *batch) error {
	switch {
	case b.enc != nil:
	case b.encoding != nil:
		b.enc = <-b.encoding
	default:
		b.enc = encodeDirect(t, l, b.rows, h.spare.takeEncoded())
	}
	b.enc.setIDs(b.rows)
	cols := l.writeColumns(t, true)
	_, err := tx.Conn().PgConn().CopyFrom(ctx, b.enc.keyOrder(b.rows),
		`COPY `+h.ident(t.Name)+` (`+strings.Join(cols, ", ")+`) FROM STDIN BINARY`)
	return err
}

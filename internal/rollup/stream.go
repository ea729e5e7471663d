package rollup

import (
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// A Stream computes rollup rows from readings given in key order, as an
// archival writes them: the versions of a merge key adjacent, so that it
// keeps one reading's winner at a time and a row per series' day, not a
// winner per merge key as a Builder does.
type Stream struct {
	d      *days
	idCols []string // the identity columns, in declared order
	key    mergeKey
	w      winner
	ok     bool
	// last is the row of the last winner added, g its group and sp its
	// day's span: the next winner is most often of the same series' day.
	last *Row
	g    group
	sp   span
}

// NewStream returns a Stream for readings of the interval table decl.
func NewStream(decl *series.Table, cal *metering.Calendar) *Stream {
	s := &Stream{d: newDays(decl, cal)}
	for _, c := range decl.Columns {
		if c.Identity {
			s.idCols = append(s.idCols, c.Name)
		}
	}
	return s
}

// keyOf is keyOf, without joining the identity again for a reading of
// the series before.
func (s *Stream) keyOf(r *series.Reading) mergeKey {
	if !s.ok || r.MaLo != s.key.malo || r.OBIS != s.key.obis {
		return keyOf(s.d.decl, r)
	}
	if len(s.idCols) == 1 && r.Extra[s.idCols[0]] != s.key.identity || len(s.idCols) > 1 {
		return keyOf(s.d.decl, r)
	}
	return mergeKey{s.key.malo, s.key.obis, s.key.identity, r.From.UnixMicro()}
}

// Add adds a version of a reading, after the other versions of its merge
// key if any.
func (s *Stream) Add(r *series.Reading) {
	k := s.keyOf(r)
	if s.ok && k == s.key {
		if beats(r, s.w) {
			s.w = winnerOf(s.d.decl, r)
		}
		return
	}
	s.flush()
	s.key, s.w, s.ok = k, winnerOf(s.d.decl, r), true
}

// AddNext is Add for a caller that compared r with the reading added
// before it already, as an archival's order check does: sameKey tells
// that r shares its merge key, sameSeries that it shares its market
// location, OBIS code and identity columns. It reads none of r's identity
// columns.
func (s *Stream) AddNext(r *series.Reading, sameKey, sameSeries bool) {
	switch {
	case !s.ok:
		s.Add(r)
	case sameKey:
		if beats(r, s.w) {
			s.w = winnerOf(s.d.decl, r)
		}
	case sameSeries:
		s.flush()
		s.key.from, s.w, s.ok = r.From.UnixMicro(), winnerOf(s.d.decl, r), true
	default:
		s.flush()
		s.key, s.w, s.ok = keyOf(s.d.decl, r), winnerOf(s.d.decl, r), true
	}
}

func (s *Stream) flush() {
	if !s.ok {
		return
	}
	s.ok = false
	g := group{s.key.malo, s.key.obis, s.key.identity, s.w.day, s.w.com, s.w.res, s.w.unit}
	if s.last != nil && g == s.g {
		s.d.countIn(s.last, &s.w, s.sp)
		return
	}
	s.last, s.g = s.d.add(s.key, &s.w), g
	s.sp = s.d.spanOf(s.last)
}

// AddBuilder adds the winners of b, whose merge keys the Stream must not
// have had.
func (s *Stream) AddBuilder(b *Builder) {
	for k, w := range b.best {
		s.d.add(k, &w)
	}
}

// Rows returns the rollup rows, of rollup version v, of the readings
// added so far, in key order.
func (s *Stream) Rows(v int64) []Row {
	s.flush()
	return s.d.rows(v)
}

// AddRows adds rows, sums of readings whose merge keys the Stream must
// not have had: a day's rows computed in parts add up.
func (s *Stream) AddRows(rows []Row) {
	for i := range rows {
		s.d.addRow(&rows[i])
	}
}

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
	d   *days
	key mergeKey
	w   winner
	ok  bool
}

// NewStream returns a Stream for readings of the interval table decl.
func NewStream(decl *series.Table, cal *metering.Calendar) *Stream {
	return &Stream{d: newDays(decl, cal)}
}

// Add adds a version of a reading, after the other versions of its merge
// key if any.
func (s *Stream) Add(r *series.Reading) {
	k := keyOf(s.d.decl, r)
	if s.ok && k == s.key {
		if beats(r, s.w) {
			s.w = winnerOf(s.d.decl, r)
		}
		return
	}
	s.flush()
	s.key, s.w, s.ok = k, winnerOf(s.d.decl, r), true
}

func (s *Stream) flush() {
	if s.ok {
		s.d.add(s.key, s.w)
		s.ok = false
	}
}

// AddBuilder adds the winners of b, whose merge keys the Stream must not
// have had.
func (s *Stream) AddBuilder(b *Builder) {
	for k, w := range b.best {
		s.d.add(k, w)
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

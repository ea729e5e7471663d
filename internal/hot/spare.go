package hot

import "sync"

// Staged rows and their encoding are kept after their write for the next
// write to fill.
//
// A batch's staged rows are its largest allocation, 272 bytes a
// reading. The garbage collector charges an allocation made while it
// marks with marking work in proportion, so rows allocated afresh for
// every write made staging a 9,600-reading batch take 2 to 3 ms of its
// 25 (BenchmarkWrite), against 0.4 reused. A sync.Pool, which every second
// collection empties, rarely held rows by the next write of a stream that
// allocates as much as a delivery's decoding does; a Tier keeps the rows
// of two batches instead, the most WriteEach has in flight, none larger
// than keptRows, and their encodings for the direct copy likewise (0.7
// MB a 9,600-reading batch), so what it keeps stays bounded: under 18 MB
// of rows and 8 MB of encodings.

// keptRows is the largest number of staged rows a Tier keeps for reuse.
const keptRows = 1 << 15

// spareRows holds the staged rows of written batches and their
// encodings.
type spareRows struct {
	mu   sync.Mutex
	kept [][]staged
	encs []*encoded
}

// take returns n staged rows, reused where rows of that many are kept.
// Every row is overwritten by stageRows.
func (s *spareRows) take(n int) []staged {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, rows := range s.kept {
		if cap(rows) >= n {
			s.kept = append(s.kept[:i], s.kept[i+1:]...)
			return rows[:n]
		}
	}
	return make([]staged, n)
}

// takeEncoded returns an encoding a written batch no longer reads, or
// nil.
func (s *spareRows) takeEncoded() *encoded {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.encs) == 0 {
		return nil
	}
	e := s.encs[len(s.encs)-1]
	s.encs = s.encs[:len(s.encs)-1]
	return e
}

// give keeps b's staged rows, cleared so that they keep no reading
// alive, and its encoding for later batches; b's rows and encoding must
// not be used after.
func (s *spareRows) give(b *batch) {
	rows, e := b.rows[:cap(b.rows)], b.enc
	b.rows, b.enc = nil, nil
	if len(rows) > keptRows {
		rows = nil
	}
	if e != nil && cap(e.at) > keptRows {
		e = nil
	}
	clear(rows)
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(rows) > 0 && len(s.kept) < 2 {
		s.kept = append(s.kept, rows)
	}
	if e != nil && len(s.encs) < 2 {
		s.encs = append(s.encs, e)
	}
}

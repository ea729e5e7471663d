package hot

import "sync"

// Staged rows are kept after their write for the next write to fill.
//
// A batch's staged rows are its largest allocation, some 270 bytes a
// reading. The garbage collector charges an allocation made while it
// marks with marking work in proportion, so rows allocated afresh for
// every write made staging a 9,600-reading batch take 2 to 3 ms of its
// 25 (BenchmarkWrite), against 0.4 reused. A sync.Pool, which every second
// collection empties, rarely held rows by the next write of a stream that
// allocates as much as a delivery's decoding does; a Tier keeps the rows
// of two batches instead, the most WriteEach has in flight, none larger
// than keptRows, so what it keeps stays bounded (under 20 MB).

// keptRows is the largest number of staged rows a Tier keeps for reuse.
const keptRows = 1 << 15

// spareRows holds the staged rows of written batches.
type spareRows struct {
	mu   sync.Mutex
	kept [][]staged
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

// give keeps b's staged rows for a later batch, cleared, so that they
// keep no reading alive; b's rows must not be used after.
func (s *spareRows) give(b *batch) {
	rows := b.rows[:cap(b.rows)]
	b.rows = nil
	if len(rows) == 0 || len(rows) > keptRows {
		return
	}
	clear(rows)
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.kept) < 2 {
		s.kept = append(s.kept, rows)
	}
}

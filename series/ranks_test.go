package series

import (
	"math/rand/v2"
	"testing"
)

// TestSeriesRanks: the ranks order any two rows as CompareSeries does,
// equal exactly for rows of one series, in batches whose runs of a series
// come in any order and repeat, with an identity column deciding some.
func TestSeriesRanks(t *testing.T) {
	tab := lastgang("power")
	tab.Columns = []Column{{Name: "register", Identity: true}}
	rng := rand.New(rand.NewPCG(1, 2))
	malos := []string{"51238696781", "10000000002", "51238696788", "10000000001"}
	for trial := range 200 {
		var rows []Reading
		for range 1 + rng.IntN(30) {
			r := Reading{MaLo: malos[rng.IntN(len(malos))], OBIS: []string{"1-1:1.29.0", "1-1:2.29.0"}[rng.IntN(2)],
				Extra: map[string]string{"register": []string{"", "a", "b"}[rng.IntN(3)]}}
			for range 1 + rng.IntN(4) {
				rows = append(rows, r)
			}
		}
		rank := seriesRanks(tab, rows)
		for i := range rows {
			for j := range rows {
				want := tab.CompareSeries(&rows[i], &rows[j])
				got := 0
				switch {
				case rank[i] < rank[j]:
					got = -1
				case rank[i] > rank[j]:
					got = 1
				}
				if got != want {
					t.Fatalf("trial %d: rows %d and %d ranked %d, %d; CompareSeries says %d", trial, i, j, rank[i], rank[j], want)
				}
			}
		}
	}
}

package series

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSortRuns: sortRuns orders as a general sort does, for inputs in
// order, reversed, random, and in runs that interleave as a batch's
// corrections do with the meter-days they correct.
func TestSortRuns(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 500 {
		n := rng.IntN(300)
		keys := make([]int, n)
		switch trial % 4 {
		case 0: // in order
			for i := range keys {
				keys[i] = i / 3
			}
		case 1: // reversed
			for i := range keys {
				keys[i] = n - i
			}
		case 2: // random, with ties
			for i := range keys {
				keys[i] = rng.IntN(20)
			}
		case 3: // runs of 1 to 20 ascending keys, each from anywhere
			for i := 0; i < n; {
				start, l := rng.IntN(100), 1+rng.IntN(20)
				for k := 0; k < l && i < n; k++ {
					keys[i] = start + k
					i++
				}
			}
		}
		compare := func(x, y int32) int {
			if c := cmp.Compare(keys[x], keys[y]); c != 0 {
				return c
			}
			return cmp.Compare(x, y)
		}
		want := make([]int32, n)
		for i := range want {
			want[i] = int32(i)
		}
		slices.SortFunc(want, compare)
		if got := sortRuns(n, compare); !slices.Equal(got, want) {
			t.Fatalf("trial %d, keys %v:\nsorted %v,\nwant   %v", trial, keys, got, want)
		}
	}
}

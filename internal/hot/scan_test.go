package hot

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestScanFilters(t *testing.T) {
	h, _ := newTier(t, Options{})
	tab := lastgang("lastgang")
	declare(t, h, tab)
	var rows []Reading
	for i := range 4 {
		rows = append(rows, meterDay(i, 1)...)
		other := meterDay(i, 1)
		for j := range other {
			other[j].OBIS = "1-1:2.29.0"
		}
		rows = append(rows, other...)
	}
	mustWrite(t, h, tab, rows)
	next := meterDay(0, 1)
	for j := range next {
		next[j].From, next[j].To = next[j].From.AddDate(0, 0, 1), next[j].To.AddDate(0, 0, 1)
	}
	mustWrite(t, h, tab, next)

	count := func(q Query) int {
		t.Helper()
		n := 0
		var last Reading
		err := h.Scan(context.Background(), tab, q, func(r Reading) error {
			if n > 0 && (r.MaLo < last.MaLo || r.MaLo == last.MaLo && r.OBIS == last.OBIS && r.From.Before(last.From)) {
				t.Fatalf("out of key order: %v after %v", r, last)
			}
			n, last = n+1, r
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, c := range []struct {
		name string
		q    Query
		want int
	}{
		{"all", Query{}, 8*96 + 96},
		{"one day", Query{From: day, To: day.AddDate(0, 0, 1)}, 8 * 96},
		{"from on", Query{From: day.AddDate(0, 0, 1)}, 96},
		{"an hour", Query{From: day.Add(time.Hour), To: day.Add(2 * time.Hour)}, 8 * 4},
		{"empty range", Query{From: day, To: day}, 0},
		{"malo", Query{MaLo: []string{malo(1), malo(3)}}, 4 * 96},
		{"obis", Query{OBIS: []string{"1-1:2.29.0"}}, 4 * 96},
		{"all filters", Query{From: day, To: day.Add(time.Hour), MaLo: []string{malo(0)}, OBIS: []string{"1-1:1.29.0"}}, 4},
	} {
		if got := count(c.q); got != c.want {
			t.Errorf("%s: %d readings, want %d", c.name, got, c.want)
		}
	}
	stop := errors.New("enough")
	n := 0
	err := h.Scan(context.Background(), tab, Query{}, func(Reading) error {
		if n++; n == 10 {
			return stop
		}
		return nil
	})
	if err != stop || n != 10 {
		t.Fatalf("stopping: %v after %d", err, n)
	}
}

package hot

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/meterstore/meterstore/series"
)

func TestScanFilters(t *testing.T) {
	h, _ := newTier(t, Options{})
	tab := lastgang("lastgang")
	declare(t, h, tab)
	var rows []series.Reading
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

	count := func(q series.Range) int {
		t.Helper()
		n := 0
		var last series.Reading
		err := h.Scan(context.Background(), tab, q, func(r series.Reading) error {
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
		q    series.Range
		want int
	}{
		{"all", series.Range{}, 8*96 + 96},
		{"one day", series.Range{From: day, To: day.AddDate(0, 0, 1)}, 8 * 96},
		{"from on", series.Range{From: day.AddDate(0, 0, 1)}, 96},
		{"an hour", series.Range{From: day.Add(time.Hour), To: day.Add(2 * time.Hour)}, 8 * 4},
		{"empty range", series.Range{From: day, To: day}, 0},
		{"malo", series.Range{MaLo: []string{malo(1), malo(3)}}, 4 * 96},
		{"obis", series.Range{OBIS: []string{"1-1:2.29.0"}}, 4 * 96},
		{"all filters", series.Range{From: day, To: day.Add(time.Hour), MaLo: []string{malo(0)}, OBIS: []string{"1-1:1.29.0"}}, 4},
	} {
		if got := count(c.q); got != c.want {
			t.Errorf("%s: %d readings, want %d", c.name, got, c.want)
		}
	}
	stop := errors.New("enough")
	n := 0
	err := h.Scan(context.Background(), tab, series.Range{}, func(series.Reading) error {
		if n++; n == 10 {
			return stop
		}
		return nil
	})
	if err != stop || n != 10 {
		t.Fatalf("stopping: %v after %d", err, n)
	}
}

// TestScanPartition reads a detached partition in chunks, and refuses a
// name that is not one of the table's partitions.
func TestScanPartition(t *testing.T) {
	ctx := t.Context()
	h, _ := newTier(t, Options{})
	tab := lastgang("lastgang")
	declare(t, h, tab)
	rows := append(meterDay(0, 1), meterDay(1, 1)...)
	mustWrite(t, h, tab, rows)
	parts, err := h.Partitions(ctx, tab)
	if err != nil {
		t.Fatal(err)
	}
	var total int
	for _, p := range parts {
		if err := h.Detach(ctx, tab, p.From); err != nil {
			t.Fatal(err)
		}
		err := h.ScanPartition(ctx, tab, p, 7, func(rs []series.Reading) error {
			if len(rs) == 0 || len(rs) > 7 {
				t.Errorf("chunk of %d rows, want 1 to 7", len(rs))
			}
			total += len(rs)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if total != len(rows) {
		t.Fatalf("read %d rows from the detached partitions, want %d", total, len(rows))
	}
	bad := Partition{Name: `lastgang_p20260101"; DROP TABLE x; --`, From: parts[0].From}
	var e *series.Error
	if err := h.ScanPartition(ctx, tab, bad, 7, func([]series.Reading) error { return nil }); !errors.As(err, &e) || e.Kind != series.InvalidInput {
		t.Fatalf("ScanPartition of a foreign name: %v, want InvalidInput", err)
	}
}

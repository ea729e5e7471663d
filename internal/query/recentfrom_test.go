package query

import (
	"testing"
	"time"

	"github.com/meterstore/meterstore/metering"
)

// TestRecentFrom checks that recentFrom(w) is where the first balancing
// day ending after w begins, of whichever commodity, for watermarks every
// hour around both clock changes of 2026 and through an ordinary day: every
// day that ends after w begins at or after it, and one begins there.
func TestRecentFrom(t *testing.T) {
	if calendarErr != nil {
		t.Fatal(calendarErr)
	}
	berlin := calendar.Location()
	for _, first := range []time.Time{
		time.Date(2026, 3, 28, 0, 0, 0, 0, berlin),
		time.Date(2026, 6, 10, 0, 0, 0, 0, berlin),
		time.Date(2026, 10, 24, 0, 0, 0, 0, berlin),
	} {
		for h := range 4 * 24 {
			w := first.Add(time.Duration(h)*time.Hour + time.Duration(h%3)*15*time.Minute)
			lo := recentFrom(w)
			if !lo.After(w.Add(-25*time.Hour)) || lo.After(w) {
				t.Fatalf("recentFrom(%v) = %v, not within the day before", w, lo)
			}
			tight := false
			for com := metering.Commodity(1); com.Valid(); com++ {
				for d := calendar.BalancingDay(w, com).AddDays(-2); !calendar.BalancingDayStart(d, com).After(w); d = d.AddDays(1) {
					start, end := calendar.BalancingDayStart(d, com), calendar.BalancingDayEnd(d, com)
					if end.After(w) && start.Before(lo) {
						t.Fatalf("recentFrom(%v) = %v: %v's day %v begins at %v and ends after it", w, lo, com, d, start)
					}
					tight = tight || start.Equal(lo) && end.After(w)
				}
			}
			if !tight {
				t.Fatalf("recentFrom(%v) = %v: no day ending after it begins there", w, lo)
			}
		}
	}
}

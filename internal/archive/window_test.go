package archive

import (
	"strings"
	"testing"
	"time"

	"github.com/meterstore/meterstore/internal/hot"
	"github.com/meterstore/meterstore/series"
)

func TestConfigValidate(t *testing.T) {
	ok := Config{SettlementLag: 48 * time.Hour, Step: 24 * time.Hour}
	if err := ok.ValidateFor(series.Daily); err != nil {
		t.Errorf("valid config refused: %v", err)
	}
	for _, c := range []struct {
		name  string
		cfg   Config
		width series.Width
		want  string
	}{
		{"lag shorter than step", Config{SettlementLag: 24 * time.Hour, Step: 48 * time.Hour}, series.Daily, "shorter than the archival step"},
		{"step not whole days", Config{SettlementLag: 48 * time.Hour, Step: 36 * time.Hour}, series.Daily, "whole number of days"},
		{"no step", Config{SettlementLag: time.Hour}, series.Daily, "whole number of days"},
		{"step shorter than a month", Config{SettlementLag: 60 * 24 * time.Hour, Step: 28 * 24 * time.Hour}, series.Monthly, "shorter than a month"},
		{"negative grace", Config{SettlementLag: 48 * time.Hour, Step: 24 * time.Hour, ReaderGrace: -1}, series.Daily, "negative reader grace"},
	} {
		err := c.cfg.ValidateFor(c.width)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one saying %q", c.name, err, c.want)
		}
	}
}

func TestNextWindow(t *testing.T) {
	d := func(n int) time.Time { return dayN(n) }
	part := func(n int, attached bool) hot.Partition {
		return hot.Partition{Name: "p", From: d(n), To: d(n + 1), Attached: attached}
	}
	const step, lag = 24 * time.Hour, 48 * time.Hour
	for _, c := range []struct {
		name     string
		w        time.Time
		parts    []hot.Partition
		now      time.Time
		due      bool
		from, to time.Time
		n        int
		recovery bool
		resume   []int // days whose partitions the ledger records as detached by an archival
	}{
		{name: "due", w: d(0), parts: []hot.Partition{part(0, true), part(1, true)}, now: d(3), due: true, from: d(0), to: d(1), n: 1},
		{name: "not yet settled", w: d(0), parts: []hot.Partition{part(0, true)}, now: d(3).Add(-time.Microsecond)},
		{name: "empty stretch widens to the next partition", w: d(0), parts: []hot.Partition{part(7, true)}, now: d(20), due: true, from: d(0), to: d(7)},
		{name: "empty stretch widens to the horizon", w: d(0), now: d(20), due: true, from: d(0), to: d(18)},
		{name: "a far partition does not widen past the horizon", w: d(0), parts: []hot.Partition{part(3000, true)}, now: d(20), due: true, from: d(0), to: d(18)},
		{name: "now before W is nothing due", w: d(10), parts: []hot.Partition{part(10, true)}, now: d(5)},
		{name: "recovery first, due or not", w: d(0), parts: []hot.Partition{part(0, false), part(1, false), part(2, true)}, resume: []int{0, 1}, now: d(0), due: true, from: d(0), to: d(2), n: 2, recovery: true},
		{name: "covered detached partitions are not windows", w: d(2), parts: []hot.Partition{part(0, false), part(1, false), part(2, true)}, now: d(4), due: false},
		{name: "a detached partition the ledger does not know is no recovery", w: d(0), parts: []hot.Partition{part(0, true), part(1, true), part(5, false), part(6, true)}, now: d(3), due: true, from: d(0), to: d(1), n: 1},
		{name: "windows go on up to a stray detached partition", w: d(1), parts: []hot.Partition{part(0, true), part(1, true), part(2, false), part(3, true)}, now: d(20), due: true, from: d(1), to: d(2), n: 1},
		{name: "nothing is due at a stray detached partition", w: d(2), parts: []hot.Partition{part(2, false), part(3, true)}, now: d(20)},
		{name: "an empty stretch widens only to a stray partition", w: d(0), parts: []hot.Partition{part(4, false), part(9, true)}, now: d(20), due: true, from: d(0), to: d(4)},
		{name: "a resumed window stops at a stray partition", w: d(0), parts: []hot.Partition{part(0, false), part(1, false), part(2, false)}, resume: []int{0, 2}, now: d(0), due: true, from: d(0), to: d(1), n: 1, recovery: true},
		{name: "a resumed window takes attached partitions only up to the horizon", w: d(0), parts: []hot.Partition{part(0, false), part(1, true), part(2, true), part(3, true), part(9, false)}, resume: []int{0, 9}, now: d(4), due: true, from: d(0), to: d(2), n: 2, recovery: true},
		{name: "a resumed partition behind an unsettled attached one waits", w: d(0), parts: []hot.Partition{part(0, true), part(1, false)}, resume: []int{1}, now: d(1)},
	} {
		resume := make(map[int64]bool)
		for _, n := range c.resume {
			resume[d(n).Unix()] = true
		}
		win, ok := nextWindow(series.Daily, c.w, c.parts, resume, step, lag, c.now)
		if ok != c.due {
			t.Errorf("%s: due %v, want %v (%+v)", c.name, ok, c.due, win)
			continue
		}
		if ok && (!win.from.Equal(c.from) || !win.to.Equal(c.to) || len(win.parts) != c.n || win.recovered != c.recovery) {
			t.Errorf("%s: window [%v, %v) with %d partitions, recovered %v; want [%v, %v) with %d, %v",
				c.name, win.from, win.to, len(win.parts), win.recovered, c.from, c.to, c.n, c.recovery)
		}
	}
}

func TestStepEndMonthly(t *testing.T) {
	feb := time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)
	if got := stepEnd(series.Monthly, feb, 31*24*time.Hour); !got.Equal(feb.AddDate(0, 1, 0)) {
		t.Errorf("31-day step from February ends %v, want March 1", got)
	}
	if got := stepEnd(series.Monthly, feb, 62*24*time.Hour); !got.Equal(feb.AddDate(0, 2, 0)) {
		t.Errorf("62-day step from February ends %v, want April 1", got)
	}
}

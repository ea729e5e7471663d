package dashboard

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meterstore/meterstore/config"
	"github.com/meterstore/meterstore/internal/pgtest"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
	"github.com/meterstore/meterstore/store"
)

// TestCommitsAndDueDays: the list of commits names a compaction for what
// it is, with no window and no write duration "not recorded"; and today,
// whose deliveries are not due, is not counted missing (the morning
// dashboard once showed the current day as 96 intervals missing, in red),
// while yesterday, due, is.
func TestCommitsAndDueDays(t *testing.T) {
	dir := t.TempDir()
	src := fmt.Sprintf("[postgres]\nurl = %q\ndata_dir = %q\n[warehouse]\nurl = %q\n"+
		"[archive]\nsettlement_lag = \"1d\"\n[[table]]\nname = \"power\"\ncommodity = \"STROM\"\nresolutions = [\"PT15M\"]\n",
		pgtest.NewDB(t), dir, "file://"+filepath.Join(dir, "wh"))
	cfg, err := config.Parse([]byte(src), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := store.OpenConfig(t.Context(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	cal, err := metering.NewCalendar()
	if err != nil {
		t.Fatal(err)
	}
	day := func(d int) time.Time { return time.Date(2026, 3, d, 0, 0, 0, 0, time.UTC) }
	m, _ := metering.MaLoFromPrefix("2000000000")
	now := day(12).Add(9 * time.Hour)
	if err := s.EnsurePartitions(t.Context(), day(1)); err != nil {
		t.Fatal(err)
	}
	// Days 1 to 10 of one meter, each Berlin day whole; day 11 (yesterday)
	// and day 12 (today) have nothing.
	for d := 1; d <= 10; d++ {
		date := metering.Date{Year: 2026, Month: time.March, Day: d}
		var rows []store.Reading
		for from := cal.DayStart(date); from.Before(cal.DayEnd(date)); from = from.Add(15 * time.Minute) {
			rows = append(rows, store.Reading{MaLo: m.String(), OBIS: "1-1:1.29.0", From: from, To: from.Add(15 * time.Minute),
				Value: series.Decimal(1000), Unit: metering.KilowattHour, Quality: metering.TrueValue,
				Resolution: metering.QuarterHour, Version: 1, VersionScope: "9900000000003:2026-03"})
		}
		if _, err := s.Write(t.Context(), "power", rows); err != nil {
			t.Fatal(err)
		}
	}
	// Two archival cycles, two windows and two files, then a compaction.
	for _, at := range []time.Time{day(4), day(6)} {
		if _, err := s.Archive(t.Context(), "power", at); err != nil {
			t.Fatal(err)
		}
	}
	c, err := s.Compact(t.Context(), "power", store.CompactOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c.FilesBefore < 2 || c.FilesAfter >= c.FilesBefore {
		t.Fatalf("the compaction rewrote nothing (%d files to %d): the test shows nothing", c.FilesBefore, c.FilesAfter)
	}
	if err := s.EnsurePartitions(t.Context(), now); err != nil {
		t.Fatal(err)
	}

	admin, adminTok := tok("ops", config.ScopeAdmin)
	d := New(s, Options{Tokens: []config.Token{admin}, Clock: func() time.Time { return now }, Days: 14})
	w := page(d, nil, adminTok)
	body := w.Body.String()
	if w.Code != 200 {
		t.Fatalf("%d %s", w.Code, body)
	}
	commits := body[strings.Index(body, "latest commits"):]
	row := func(kind string) string {
		i := strings.Index(commits, `<td class="kind">`+kind)
		if i < 0 {
			return ""
		}
		end := strings.Index(commits[i:], "</tr>")
		return commits[i : i+end]
	}
	if r := row("compaction: "); r == "" || !strings.Contains(r, "files rewritten") {
		t.Errorf("no compaction among the commits:\n%s", commits)
	}
	if r := row("compaction"); strings.Contains(r, "not recorded") || !strings.Contains(r, "<td>–</td>") {
		t.Errorf("the compaction's row: %s", r)
	}
	if r := row("archival"); !strings.Contains(r, "2026-03-") || !strings.Contains(r, " – ") {
		t.Errorf("an archival's row names no window: %s", r)
	}
	// Yesterday (the 11th) is due and missing whole: 96 intervals. Today
	// is not due, and counted nowhere.
	if !strings.Contains(body, `class="bad">96 / 0`) {
		t.Errorf("missing on the page is not yesterday's 96:\n%s", body[strings.Index(body, "<dl"):strings.Index(body, "</dl>")])
	}
	if !strings.Contains(body, `data-not-due="1"`) || !strings.Contains(body, "not due yet") {
		t.Error("the page does not say that today is not due yet")
	}
}

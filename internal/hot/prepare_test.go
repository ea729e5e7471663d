package hot

import (
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// offline returns a tier without a server, for what Write checks in Go.
func offline(t testing.TB) *Tier {
	h, err := New(nil, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestPrepareInvalidInput(t *testing.T) {
	h := offline(t)
	tab := lastgang("lastgang")
	tab.Columns = []series.Column{{Name: "channel", Identity: true, Values: []string{"A", "B"}}, {Name: "seq", Type: series.BigInt}}
	for _, c := range []struct {
		name   string
		change func(*series.Reading)
		reason string
	}{
		{"check digit", func(r *series.Reading) { r.MaLo = r.MaLo[:10] + string('0'+(r.MaLo[10]-'0'+5)%10) }, "check digit"},
		{"short malo", func(r *series.Reading) { r.MaLo = r.MaLo[1:] }, "malo_id"},
		{"melo", func(r *series.Reading) { r.MeLo = "DE00012345678901234567890123456" }, "melo_id"},
		{"obis syntax", func(r *series.Reading) { r.OBIS = "1-1:1.29" }, "obis_code"},
		{"obis range", func(r *series.Reading) { r.OBIS = "1-1:1.29.256" }, "obis_code"},
		{"obis spelling", func(r *series.Reading) { r.OBIS = "1-1:1.29.0*255" }, "not canonical"},
		{"obis medium", func(r *series.Reading) { r.OBIS = "7-20:3.0.0" }, "measures GAS"},
		{"no commodity", func(r *series.Reading) { r.Commodity = 9 }, "sparte"},
		{"no from", func(r *series.Reading) { r.From = time.Time{} }, "from 0001-01-01T00:00:00Z is out of the supported range"},
		{"nanoseconds", func(r *series.Reading) { r.From = r.From.Add(time.Nanosecond) }, "microsecond"},
		{"off grid", func(r *series.Reading) { r.From, r.To = r.From.Add(time.Minute), r.To.Add(time.Minute) }, "grid"},
		{"wrong length", func(r *series.Reading) { r.To = r.To.Add(15 * time.Minute) }, "ends at"},
		{"resolution", func(r *series.Reading) { r.Resolution = metering.Hour }, "not accepted"},
		{"value", func(r *series.Reading) { r.Value = series.MaxDecimal + 1 }, "numeric(18,6)"},
		{"unit", func(r *series.Reading) { r.Unit = 0 }, "unit"},
		{"quality", func(r *series.Reading) { r.Quality = 99 }, "quality"},
		{"scope", func(r *series.Reading) { r.VersionScope = "9900000000003:2026-3" }, "version_scope"},
		{"scope blank", func(r *series.Reading) { r.VersionScope = "99 00:2026-03" }, "version_scope"},
		{"identity missing", func(r *series.Reading) { delete(r.Extra, "channel") }, "identity column"},
		{"coded value", func(r *series.Reading) { r.Extra["channel"] = "C" }, "not one of"},
		{"bigint", func(r *series.Reading) { r.Extra["seq"] = "007" }, "canonical"},
		{"undeclared", func(r *series.Reading) { r.Extra["other"] = "x" }, "not declared"},
	} {
		rows := meterDay(1, 1)[:3]
		for i := range rows {
			rows[i].Extra = map[string]string{"channel": "A"}
		}
		c.change(&rows[1])
		_, err := h.prepare(tab, rows)
		e := wantError(t, err, series.InvalidInput, 1)
		if !strings.Contains(e.Problems[0].Reason, c.reason) {
			t.Errorf("%s: reason %q, want %q in it", c.name, e.Problems[0].Reason, c.reason)
		}
	}
}

func TestPreparePointTable(t *testing.T) {
	h := offline(t)
	tab := &series.Table{Name: "register", TimeModel: series.Point, Commodity: metering.Electricity, Width: series.Monthly}
	r := qh(1, 0, 42, 1)
	r.To, r.Resolution = time.Time{}, 0
	if _, err := h.prepare(tab, []series.Reading{r}); err != nil {
		t.Fatal(err)
	}
	r.To = r.From
	_, err := h.prepare(tab, []series.Reading{r})
	wantError(t, err, series.InvalidInput, 0)
}

// TestBalancingDay: the gas day runs from 06:00 to 06:00 Berlin time, so a
// reading at 05:00 local belongs to the day before.
func TestBalancingDay(t *testing.T) {
	h := offline(t)
	tab := lastgang("gas")
	tab.Commodity = metering.Gas
	r := qh(1, 0, 1, 1)
	r.OBIS = "7-20:3.0.0"
	r.From = time.Date(2026, 1, 15, 4, 0, 0, 0, time.UTC) // 05:00 CET
	r.To = r.From.Add(15 * time.Minute)
	b, err := h.prepare(tab, []series.Reading{r})
	if err != nil {
		t.Fatal(err)
	}
	if got := b.rows[0].day.Format("2006-01-02"); got != "2026-01-14" {
		t.Fatalf("gas day of 05:00 CET on Jan 15: %s", got)
	}
	r.OBIS, r.Commodity = "1-1:1.29.0", metering.Electricity
	if b, err = h.prepare(tab, []series.Reading{r}); err != nil || b.rows[0].day.Format("2006-01-02") != "2026-01-15" {
		t.Fatalf("local day: %v, %v", b.rows[0].day, err)
	}
}

// TestCalendarIntervals: a day is a Berlin day (23 hours when summer time
// begins) and a gas day starts at 06:00; both are accepted only whole.
func TestCalendarIntervals(t *testing.T) {
	h := offline(t)
	tab := lastgang("daily")
	tab.Resolutions = []metering.Resolution{metering.Day, metering.Month}
	cal, _ := metering.NewCalendar()
	d := metering.Date{Year: 2026, Month: time.March, Day: 29}
	r := qh(1, 0, 1, 1)
	r.Resolution, r.From, r.To = metering.Day, cal.DayStart(d), cal.DayEnd(d)
	if r.To.Sub(r.From) != 23*time.Hour {
		t.Fatalf("fixture: %v", r.To.Sub(r.From))
	}
	b, err := h.prepare(tab, []series.Reading{r})
	if err != nil {
		t.Fatal(err)
	}
	if len(b.rows[0].anc) != 1 || !b.rows[0].anc[0].Equal(cal.MonthStart(2026, time.March, metering.Electricity)) {
		t.Fatalf("ancestors %v", b.rows[0].anc)
	}
	r.To = r.From.Add(24 * time.Hour)
	_, err = h.prepare(tab, []series.Reading{r})
	wantError(t, err, series.InvalidInput, 0)

	gas := qh(1, 0, 1, 1)
	gas.OBIS, gas.Commodity, gas.Resolution = "7-20:3.0.0", metering.Gas, metering.Day
	gas.From, gas.To = cal.GasDayStart(d), cal.GasDayEnd(d)
	if _, err := h.prepare(tab, []series.Reading{gas}); err != nil {
		t.Fatal(err)
	}
	gas.From, gas.To = cal.DayStart(d), cal.DayEnd(d) // midnight is not a gas day
	_, err = h.prepare(tab, []series.Reading{gas})
	wantError(t, err, series.InvalidInput, 0)
}

func BenchmarkPrepare(b *testing.B) {
	h := offline(b)
	tab := lastgang("lastgang")
	var rows []series.Reading
	for i := range 100 {
		rows = append(rows, meterDay(i, 20260303120000)...)
	}
	for b.Loop() {
		if _, err := h.prepare(tab, rows); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(rows)), "ns/row")
}

// TestPrepareLargeBatchInParts: a batch large enough to be checked and
// staged in parts, with repeats and bad rows in every part, gives what
// one part would: every bad row named, in order, and the staged rows the
// batch's non-repeats, in order, each with its own row.
func TestPrepareLargeBatchInParts(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(4))
	h := offline(t)
	tab := lastgang("lastgang")
	var rows []series.Reading
	for i := range 3 * parallelRows / 96 * 2 {
		rows = append(rows, meterDay(i, 1)...)
	}
	n := len(rows)
	if n/parallelRows < 4 {
		t.Fatalf("fixture: %d rows are fewer than four parts", n)
	}
	// A repeat of an earlier row in each quarter, and one of the row
	// before a part's first, so a part's count of repeats matters.
	repeats := map[int]bool{}
	for _, at := range []int{5, n/4 + 7, n/2 - 1, n/2 + 3, 3*n/4 + 11, n - 1} {
		rows[at] = rows[at-1]
		rows[at].To = rows[at-1].To
		repeats[at] = true
	}
	got, err := h.prepare(tab, rows)
	if err != nil {
		t.Fatal(err)
	}
	j := 0
	for i := range rows {
		if repeats[i] {
			if got.status[i] != series.Present {
				t.Fatalf("row %d: status %v, want Present", i, got.status[i])
			}
			continue
		}
		if j == len(got.rows) || got.rows[j].row != int32(i) || got.rows[j].src != &rows[i] {
			t.Fatalf("staged row %d is not batch row %d", j, i)
		}
		j++
	}
	if j != len(got.rows) {
		t.Fatalf("%d rows staged, want %d", len(got.rows), j)
	}

	bad := []int{3, n/4 + 1, n / 2, 3*n/4 + 2, n - 2}
	for _, at := range bad {
		rows[at].Unit = 0
	}
	_, err = h.prepare(tab, rows)
	wantError(t, err, series.InvalidInput, bad...)
}

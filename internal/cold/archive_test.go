package cold

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

func TestArchiveRoundTrip(t *testing.T) {
	e := newEnv(t, Options{BatchRows: 100})
	tab := loadProfile("power")
	h := e.ensure(t, tab)

	var rows []series.Reading
	for i := range 4 {
		rows = append(rows, quarterHours(i, jan2026, 2*96)...)
	}
	// The extremes of both decimal columns, and the last quarter hour of
	// the window.
	rows[0].Value = series.MaxDecimal
	rows[1].Value = -series.MaxDecimal
	rows[2].Value = -1 // -0.000001
	rows[3].Version = math.MaxUint64
	rows[4].Version = 0
	last := quarterHour(9, feb2026.Add(-15*time.Minute), 0)
	last.Extra = map[string]string{"channel": "B"}
	rows = append(rows, last)

	c, err := e.tier.Archive(t.Context(), h, feb2026, jan2026, feb2026, Readings(rows))
	if err != nil {
		t.Fatal(err)
	}
	if c.Rows != int64(len(rows)) || c.Files < 2 || c.Bytes <= 0 || !c.Watermark.Equal(feb2026) {
		t.Fatalf("commit %+v: want %d rows in a file per channel", c, len(rows))
	}
	sum := e.summary(t, h)
	for k, v := range map[string]string{
		SummaryWatermark:    "2026-02-01T00:00:00.000000Z",
		SummaryArchivedFrom: "2026-01-01T00:00:00.000000Z",
		SummaryArchivedTo:   "2026-02-01T00:00:00.000000Z",
		SummaryRows:         fmt.Sprint(len(rows)),
	} {
		if sum[k] != v {
			t.Errorf("summary %s = %q, want %q", k, sum[k], v)
		}
	}
	if sum[SummaryCommitID] == "" {
		t.Errorf("summary has no %s", SummaryCommitID)
	}

	sameReadings(t, tab, collect(t, e.tier.Scan(t.Context(), h, series.Range{})), rows)

	// Filters: one location, one day.
	day := jan2026.Add(24 * time.Hour)
	got := collect(t, e.tier.Scan(t.Context(), h, series.Range{From: day, To: day.Add(24 * time.Hour), MaLo: []string{malo(2)}}))
	want := slices.DeleteFunc(slices.Clone(rows), func(r series.Reading) bool {
		return r.MaLo != malo(2) || r.From.Before(day) || !r.From.Before(day.Add(24*time.Hour))
	})
	if len(want) != 96 {
		t.Fatalf("fixture: %d readings of a day", len(want))
	}
	sameReadings(t, tab, got, want)
	if got := collect(t, e.tier.Scan(t.Context(), h, series.Range{OBIS: []string{"1-1:2.29.0"}})); len(got) != 0 {
		t.Fatalf("scan for an OBIS code nobody has: %d readings", len(got))
	}

	w, ok, err := e.tier.Watermark(t.Context(), h)
	if err != nil || !ok || !w.Equal(feb2026) {
		t.Fatalf("watermark %v %v %v, want %v", w, ok, err, feb2026)
	}
}

func TestArchivePointTable(t *testing.T) {
	e := newEnv(t, Options{})
	tab := registers("meters")
	h := e.ensure(t, tab)
	var rows []series.Reading
	for i := range 10 {
		from := jan2026.Add(time.Duration(i) * 24 * time.Hour).Add(5*time.Hour + 123456*time.Microsecond)
		rows = append(rows, series.Reading{
			MaLo: malo(i), OBIS: "7-0:3.0.0", From: from, Value: series.Decimal(i * 1_000_001),
			Unit: metering.CubicMetre, Quality: metering.Substitute, Version: uint64(i),
			VersionScope: "9870000000001:2026-01", RecordedAt: recorded,
			BalancingDay: cal.BalancingDay(from, metering.Gas),
		})
	}
	e.archive(t, h, jan2026, feb2026, rows)
	sameReadings(t, tab, collect(t, e.tier.Scan(t.Context(), h, series.Range{})), rows)
}

func TestArchiveEmptyWindowMovesWatermark(t *testing.T) {
	e := newEnv(t, Options{})
	h := e.ensure(t, loadProfile("power"))
	c := e.archive(t, h, jan2026, mar2026, nil)
	if c.Rows != 0 || c.Files != 0 || !c.Watermark.Equal(mar2026) {
		t.Fatalf("commit %+v", c)
	}
	if w, ok, err := e.tier.Watermark(t.Context(), h); err != nil || !ok || !w.Equal(mar2026) {
		t.Fatalf("watermark %v %v %v", w, ok, err)
	}
}

func TestArchiveRefuses(t *testing.T) {
	e := newEnv(t, Options{})
	tab := loadProfile("power")
	h := e.ensure(t, tab)
	e.archive(t, h, jan2026, feb2026, quarterHours(0, jan2026, 4))
	before := e.files(t, ".parquet")

	outside := quarterHours(1, feb2026, 4)
	outside[2].From = outside[2].From.Add(31 * 24 * time.Hour)
	outside[2].To = outside[2].From.Add(15 * time.Minute)
	badMaLo := quarterHours(1, feb2026, 3)
	badMaLo[1].MaLo = "51234567890" // check digit
	noChannel := quarterHours(1, feb2026, 3)
	delete(noChannel[2].Extra, "channel")

	for _, tc := range []struct {
		name        string
		w, from, to time.Time
		rows        []series.Reading
		is          error
		kind        series.Kind
		row         int
	}{
		{name: "watermark backwards", w: jan2026.Add(time.Hour), from: jan2026, to: jan2026.Add(time.Hour), is: ErrWatermarkBackwards},
		{name: "window archived", w: mar2026, from: jan2026.Add(24 * time.Hour), to: mar2026, is: ErrWindowArchived},
		{name: "reading outside the window", w: mar2026, from: feb2026, to: mar2026, rows: outside, kind: series.InvalidInput, row: 2},
		{name: "check digit", w: mar2026, from: feb2026, to: mar2026, rows: badMaLo, kind: series.InvalidInput, row: 1},
		{name: "identity column missing", w: mar2026, from: feb2026, to: mar2026, rows: noChannel, kind: series.InvalidInput, row: 2},
		{name: "window above the watermark", w: feb2026.Add(time.Hour), from: feb2026, to: mar2026},
		{name: "nanoseconds", w: mar2026.Add(1), from: feb2026, to: mar2026},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := e.tier.Archive(t.Context(), h, tc.w, tc.from, tc.to, Readings(tc.rows))
			if err == nil {
				t.Fatal("archived")
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Fatalf("error %v, want %v", err, tc.is)
			}
			var he *series.Error
			if tc.kind != 0 && (!errors.As(err, &he) || he.Kind != tc.kind || !slices.Equal(he.Rows, []int{tc.row})) {
				t.Fatalf("error %v, want %v naming row %d", err, tc.kind, tc.row)
			}
			if after := e.files(t, ".parquet"); !slices.Equal(after, before) {
				t.Fatalf("a refused archival left data files: %v", after)
			}
		})
	}
	if w, _, _ := e.tier.Watermark(t.Context(), h); !w.Equal(feb2026) {
		t.Fatalf("watermark moved to %v", w)
	}
}

func TestArchiveSourceError(t *testing.T) {
	e := newEnv(t, Options{BatchRows: 10})
	h := e.ensure(t, loadProfile("power"))
	boom := errors.New("connection reset")
	rows := func(yield func(series.Reading, error) bool) {
		for k := range 1000 {
			if k == 500 {
				yield(series.Reading{}, boom)
				return
			}
			if !yield(quarterHour(0, jan2026, k), nil) {
				return
			}
		}
	}
	if _, err := e.tier.Archive(t.Context(), h, feb2026, jan2026, feb2026, rows); !errors.Is(err, boom) {
		t.Fatalf("archive of a failing source: %v", err)
	}
	if files := e.files(t, ".parquet"); len(files) != 0 {
		t.Fatalf("a failed archival left data files: %v", files)
	}
	if _, ok, err := e.tier.Watermark(t.Context(), h); ok || err != nil {
		t.Fatalf("watermark after a failed archival: %v %v", ok, err)
	}
}

func TestFromScan(t *testing.T) {
	e := newEnv(t, Options{BatchRows: 7})
	tab := loadProfile("power")
	h := e.ensure(t, tab)
	rows := quarterHours(0, jan2026, 50)
	var calls int
	scan := func(fn func(series.Reading) error) error {
		for _, r := range rows {
			calls++
			if err := fn(r); err != nil {
				return err
			}
		}
		return nil
	}
	c, err := e.tier.Archive(t.Context(), h, feb2026, jan2026, feb2026, FromScan(scan))
	if err != nil || c.Rows != 50 {
		t.Fatalf("archive from a callback scan: %+v, %v", c, err)
	}
	sameReadings(t, tab, collect(t, e.tier.Scan(t.Context(), h, series.Range{})), rows)

	// A consumer that stops ends the scan; a scan that fails says so.
	calls = 0
	for range FromScan(scan) {
		break
	}
	if calls != 1 {
		t.Fatalf("the scan ran on for %d readings after the consumer stopped", calls)
	}
	boom := errors.New("server closed the connection")
	var got error
	for _, err := range FromScan(func(func(series.Reading) error) error { return boom }) {
		got = err
	}
	if !errors.Is(got, boom) {
		t.Fatalf("the scan's error: %v", got)
	}
}

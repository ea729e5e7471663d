package store

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/meterstore/meterstore/metering"
)

// TestSeriesReads: the typed reads of a series answer what SQL over
// readings answers, across the tier boundary (days below W in the cold
// tier, a late correction among them, days above in PostgreSQL), by
// identity column, as known at a time, and through the latest reading
// and the gaps the calendar expects.
func TestSeriesReads(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	s := e.open(t, Options{})
	if err := s.CreatePartitions(ctx, dayN(0), dayN(6)); err != nil {
		t.Fatal(err)
	}
	for d := range 6 {
		for slot := range 4 {
			mustWrite(t, s, []Reading{qh(1, d, slot, "A", 1, int64(1000*(d+1)+slot)), qh(1, d, slot, "B", 1, 7)})
		}
	}
	if out, err := s.Archive(ctx, "power", dayN(5)); err != nil || !out.Watermark.Equal(dayN(3)) {
		t.Fatalf("archive: %+v, %v", out, err)
	}
	before := time.Now()
	mustWrite(t, s, []Reading{qh(1, 1, 2, "A", 2, 99999), qh(1, 4, 1, "A", 2, 88888)}) // below W and above it

	q := SeriesQuery{MaLo: malo(1), OBIS: "1-1:1.29.0*255", From: dayN(1), To: dayN(5), Identity: map[string]string{"channel": "A"}}
	check := func(what string, q SeriesQuery, sql string) {
		t.Helper()
		got, err := s.SeriesReadings(ctx, "power", q)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		st, err := s.Prepare(ctx, sql, StatementOptions{Read: q.Read})
		if err != nil {
			t.Fatal(err)
		}
		want, err := st.Query(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want.Rows) || len(got) == 0 {
			t.Fatalf("%s: %d readings, SQL %d", what, len(got), len(want.Rows))
		}
		for i, r := range got {
			w := want.Rows[i]
			g := fmt.Sprintln(r.From.UTC(), r.Value, r.Version, r.Extra["channel"], r.MaLo, r.OBIS, r.Unit)
			x := fmt.Sprintln(w[0].(time.Time).UTC(), w[1], w[2], w[3], malo(1), "1-1:1.29.0", metering.KilowattHour)
			if g != x {
				t.Errorf("%s: reading %d: %s; SQL %s", what, i, g, x)
			}
		}
	}
	const sql = `SELECT "from", CAST(value AS VARCHAR), CAST(version AS UBIGINT), channel FROM power.readings
		WHERE malo_id = '%s' AND channel = 'A' AND "from" >= TIMESTAMPTZ '%s' AND "from" < TIMESTAMPTZ '%s' ORDER BY "from"`
	lit := func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05+00") }
	check("both tiers", q, fmt.Sprintf(sql, malo(1), lit(q.From), lit(q.To)))
	got, err := s.SeriesReadings(ctx, "power", q)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 16 || got[2].Value.String() != "0.099999" || got[2].Version != 2 || got[13].Value.String() != "0.088888" {
		t.Errorf("the corrections: %d readings, %v v%d, %v", len(got), got[2].Value, got[2].Version, got[13].Value)
	}
	known := q
	known.Read = ReadOptions{KnownAt: before}
	check("known at", known, fmt.Sprintf(sql, malo(1), lit(q.From), lit(q.To)))
	old, err := s.SeriesReadings(ctx, "power", known)
	if err != nil || old[2].Value.String() != "0.002002" || old[2].Version != 1 {
		t.Errorf("known before the correction: %v %v", old[2].Value, err)
	}

	latest, ok, err := s.LatestReading(ctx, "power", q)
	if err != nil || !ok || !latest.From.Equal(dayN(4).Add(45*time.Minute)) {
		t.Errorf("latest: %+v %v %v", latest, ok, err)
	}
	gq := q
	gq.From, gq.To = dayN(4), dayN(4).Add(2*time.Hour)
	gaps, err := s.Gaps(ctx, "power", gq)
	if err != nil || len(gaps) != 1 || !gaps[0].From.Equal(dayN(4).Add(time.Hour)) || !gaps[0].To.Equal(dayN(4).Add(2*time.Hour)) {
		t.Errorf("gaps: %+v %v; want [day 4 01:00, 02:00)", gaps, err)
	}
	gq.To = time.Time{}
	if _, err := s.Gaps(ctx, "power", gq); err == nil {
		t.Error("gaps of an open range")
	}
	bad := q
	bad.MaLo = "10000000001"
	if _, err := s.SeriesReadings(ctx, "power", bad); !isInvalid(err) {
		t.Errorf("a market location with a wrong check digit: %v", err)
	}
}

// isInvalid reports whether err is of kind InvalidInput.
func isInvalid(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.Kind == InvalidInput
}

package hot

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

func TestWriteScanRoundTrip(t *testing.T) {
	h, _ := newTier(t, Options{})
	tab := lastgang("lastgang")
	tab.Columns = []series.Column{
		{Name: "channel", Identity: true, Values: []string{"A", "B"}},
		{Name: "source", Type: series.Text},
		{Name: "seq", Type: series.BigInt},
	}
	declare(t, h, tab)
	var rows []series.Reading
	for i := range 3 {
		for _, r := range meterDay(i, 20260303120000) {
			r.Extra = map[string]string{"channel": "A", "seq": "-42"}
			if i == 2 {
				r.Version = math.MaxUint64
			}
			if i == 1 {
				r.MeLo = "DE0001234567890123456789012345678"
				r.Subject = "p-17"
				r.Extra["source"] = "MSCONS"
			}
			rows = append(rows, r)
		}
	}
	res := mustWrite(t, h, tab, rows)
	if res.Inserted != len(rows) || res.Present != 0 {
		t.Fatalf("result %+v", res)
	}
	got := scanAll(t, h, tab)
	if len(got) != len(rows) {
		t.Fatalf("scanned %d rows, want %d", len(got), len(rows))
	}
	cal, _ := metering.NewCalendar()
	for i, g := range got {
		w := rows[i] // written in primary key order already
		if g.RecordedAt.IsZero() || time.Since(g.RecordedAt) > time.Hour {
			t.Fatalf("row %d: recorded_at %v", i, g.RecordedAt)
		}
		if want := cal.BalancingDay(w.From, metering.Electricity); g.BalancingDay != want {
			t.Fatalf("row %d: balancing day %v, want %v", i, g.BalancingDay, want)
		}
		w.Commodity = metering.Electricity
		g.RecordedAt, g.BalancingDay = time.Time{}, metering.Date{}
		if g.From.Equal(w.From) && g.To.Equal(w.To) {
			g.From, g.To = w.From, w.To
		}
		if !equalReading(g, w) {
			t.Fatalf("row %d:\n got %+v\nwant %+v", i, g, w)
		}
	}
}

func equalReading(a, b series.Reading) bool {
	if len(a.Extra) != len(b.Extra) {
		return false
	}
	for k, v := range a.Extra {
		if b.Extra[k] != v {
			return false
		}
	}
	a.Extra, b.Extra = nil, nil
	return reflect.DeepEqual(a, b)
}

// modes runs f for a table of each integrity: exclusion constraints,
// statement checks (for the tables that allow them), and Write alone.
func modes(t *testing.T, f func(t *testing.T, h *Tier, tab func(*series.Table) *series.Table)) {
	for _, i := range []series.Integrity{series.IntegrityExclusion, series.IntegrityStatement, series.IntegrityWrite} {
		t.Run(i.String(), func(t *testing.T) {
			h, _ := newTier(t, Options{})
			f(t, h, func(tab *series.Table) *series.Table {
				if i == series.IntegrityStatement && !tab.StatementCapable() {
					t.Skipf("%s: integrity statement is for interval tables of one fixed resolution", tab.Name)
				}
				tab.Integrity = i
				declare(t, h, tab)
				return tab
			})
		})
	}
}

// snapshot returns the stored rows of tab, for comparing before and after.
func snapshot(t *testing.T, h *Tier, tab *series.Table) string {
	t.Helper()
	return fmt.Sprint(scanAll(t, h, tab))
}

// refused writes rows, expects an error of kind k naming exactly rows want,
// and checks that the table did not change.
func refused(t *testing.T, h *Tier, tab *series.Table, rows []series.Reading, k series.Kind, want ...int) *series.Error {
	t.Helper()
	before := snapshot(t, h, tab)
	_, err := h.Write(context.Background(), tab, rows)
	e := wantError(t, err, k, want...)
	if after := snapshot(t, h, tab); after != before {
		t.Fatalf("a refused batch changed the table")
	}
	return e
}

func TestWriteIntegrity(t *testing.T) {
	modes(t, func(t *testing.T, h *Tier, declared func(*series.Table) *series.Table) {
		tab := declared(lastgang("lastgang"))
		stored := meterDay(1, 100)
		mustWrite(t, h, tab, stored)

		t.Run("identical redelivery is a no-op", func(t *testing.T) {
			before := snapshot(t, h, tab)
			res := mustWrite(t, h, tab, stored)
			if res.Present != len(stored) || res.Inserted != 0 {
				t.Fatalf("redelivery: %+v", res)
			}
			if snapshot(t, h, tab) != before {
				t.Fatal("redelivery changed the table")
			}
		})
		t.Run("restated value", func(t *testing.T) {
			rows := meterDay(2, 100) // new rows around the bad one
			bad := stored[40]
			bad.Value++
			rows = append(rows[:10], append([]series.Reading{bad}, rows[10:]...)...)
			e := refused(t, h, tab, rows, series.IntegrityViolation, 10)
			if !strings.Contains(e.Problems[0].Reason, "value") {
				t.Fatalf("reason %q", e.Problems[0].Reason)
			}
		})
		t.Run("restated quality", func(t *testing.T) {
			bad := stored[3]
			bad.Quality = metering.Substitute
			refused(t, h, tab, []series.Reading{stored[2], bad}, series.IntegrityViolation, 1)
		})
		t.Run("second network operator", func(t *testing.T) {
			bad := stored[7]
			bad.Version = 200 // a correction, but from someone else
			bad.VersionScope = "9900000000010:2026-03"
			refused(t, h, tab, []series.Reading{bad}, series.IntegrityViolation, 0)
		})
		t.Run("correction by the same operator", func(t *testing.T) {
			fix := stored[7]
			fix.Version, fix.Value = 200, 999_000
			res := mustWrite(t, h, tab, []series.Reading{fix, stored[8]})
			if res.Status[0] != series.Superseded || res.Status[1] != series.Present {
				t.Fatalf("statuses %v", res.Status)
			}
		})
		t.Run("no partition", func(t *testing.T) {
			rows := meterDay(3, 100)
			late := qh(3, 0, 1000, 100)
			late.From, late.To = day.AddDate(0, 0, 9), day.AddDate(0, 0, 9).Add(15*time.Minute)
			rows = append(rows[:50], append([]series.Reading{late}, rows[50:]...)...)
			refused(t, h, tab, rows, series.InvalidInput, 50)
		})
		t.Run("check digit", func(t *testing.T) {
			rows := meterDay(4, 100)
			rows[20].MaLo = rows[20].MaLo[:10] + string('0'+(rows[20].MaLo[10]-'0'+1)%10)
			refused(t, h, tab, rows, series.InvalidInput, 20)
		})
		t.Run("unknown OBIS", func(t *testing.T) {
			rows := meterDay(4, 100)
			rows[5].OBIS = "1-1:1.29.0*256"
			rows[6].OBIS = "1-1:01.29.0"
			refused(t, h, tab, rows, series.InvalidInput, 5, 6)
		})
		t.Run("restated within the batch", func(t *testing.T) {
			rows := meterDay(5, 100)
			again := rows[30]
			again.Value++
			refused(t, h, tab, append(rows, again), series.IntegrityViolation, 96)
		})
		t.Run("repeated within the batch", func(t *testing.T) {
			rows := meterDay(6, 100)
			res := mustWrite(t, h, tab, append(rows, rows[0], rows[95]))
			if res.Inserted != 96 || res.Present != 2 || res.Status[96] != series.Present {
				t.Fatalf("%+v", res)
			}
		})
		t.Run("two operators within the batch", func(t *testing.T) {
			rows := meterDay(7, 100)
			other := rows[12]
			other.Version, other.VersionScope = 101, "9900000000010:2026-03"
			refused(t, h, tab, append(rows, other), series.IntegrityViolation, 96)
		})
	})
}

// multiResolution declares a table of quarter hours, hours and days, in
// which intervals of one version can overlap.
func multiResolution() *series.Table {
	tab := lastgang("mixed")
	tab.Resolutions = []metering.Resolution{metering.QuarterHour, metering.Hour, metering.Day}
	return tab
}

func TestWriteOverlap(t *testing.T) {
	modes(t, func(t *testing.T, h *Tier, declared func(*series.Table) *series.Table) {
		tab := declared(multiResolution())
		ctx := context.Background()
		// Partitions around the Berlin day of `day`, which starts at
		// 23:00 UTC the evening before.
		if _, err := h.CreatePartitions(ctx, tab, day.AddDate(0, 0, -1), day); err != nil {
			t.Fatal(err)
		}
		stored := meterDay(1, 100) // quarter hours of UTC day `day`
		mustWrite(t, h, tab, stored)

		hour := qh(1, 4, 5000, 100) // 01:00-02:00 contains slots 4..7
		hour.To, hour.Resolution = hour.From.Add(time.Hour), metering.Hour
		refused(t, h, tab, []series.Reading{hour}, series.IntegrityViolation, 0)

		// The same hour under another version is a different delivery.
		hour.Version = 101
		mustWrite(t, h, tab, []series.Reading{hour})

		// A quarter hour inside a stored hour of its version.
		inner := qh(1, 6, 7000, 101)
		refused(t, h, tab, []series.Reading{inner}, series.IntegrityViolation, 0)

		// A Berlin day crosses UTC midnight, so it lies in two partitions:
		// the stored quarter hours of `day` are in the later one.
		cal, _ := metering.NewCalendar()
		d := cal.LocalDay(day.Add(12 * time.Hour))
		daily := qh(1, 0, 9000, 100)
		daily.From, daily.To, daily.Resolution = cal.DayStart(d), cal.DayEnd(d), metering.Day
		if daily.From.After(day) || !daily.To.After(day) {
			t.Fatalf("fixture: %v..%v does not cross %v", daily.From, daily.To, day)
		}
		refused(t, h, tab, []series.Reading{daily}, series.IntegrityViolation, 0)

		// Within one batch, too: the quarter hours after 02:00 are named,
		// being the rows that find the hour among their ancestors.
		rows := meterDay(2, 300)
		hour2 := rows[8]
		hour2.To, hour2.Resolution = hour2.From.Add(time.Hour), metering.Hour
		rows = append(rows[:8:8], rows[9:]...) // slots 9, 10, 11 at 8, 9, 10
		refused(t, h, tab, append(rows, hour2), series.IntegrityViolation, 8, 9, 10)

		// Adjacent intervals do not overlap.
		next := qh(3, 4, 1, 100)
		next.To, next.Resolution = next.From.Add(time.Hour), metering.Hour
		mustWrite(t, h, tab, []series.Reading{qh(3, 3, 1, 100), next, qh(3, 8, 1, 100)})
	})
}

// TestWriteBatchAtomic100k: one bad row in the middle of 100,000 writes
// nothing, whether Go finds it before the copy or the server after it.
func TestWriteBatchAtomic100k(t *testing.T) {
	h, pool := newTier(t, Options{})
	tab := lastgang("lastgang")
	declare(t, h, tab)
	ctx := context.Background()
	stored := meterDay(0, 100)
	mustWrite(t, h, tab, stored)
	var rows []series.Reading
	for i := 1; len(rows) < 100_000; i++ {
		rows = append(rows, meterDay(i, 100)...)
	}
	rows = rows[:100_000]
	count := func() int {
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+h.ident(tab.Name)).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}

	// The server's turn: a restatement of a stored row, which only the
	// primary key of the stored table catches, after 50,000 rows went in.
	bad := stored[17]
	bad.Value += 1000
	saved := rows[50_000]
	rows[50_000] = bad
	_, err := h.Write(ctx, tab, rows)
	wantError(t, err, series.IntegrityViolation, 50_000)
	if n := count(); n != len(stored) {
		t.Fatalf("%d rows stored after a refused batch, want %d", n, len(stored))
	}

	// Go's turn: a failed check digit.
	rows[50_000] = saved
	rows[50_001].MaLo = "10000000000"
	_, err = h.Write(ctx, tab, rows)
	wantError(t, err, series.InvalidInput, 50_001)
	if n := count(); n != len(stored) {
		t.Fatalf("%d rows stored after a refused batch, want %d", n, len(stored))
	}
}

// TestConcurrentOperators races two writers delivering one reading from two
// network operators: exactly one may win, in either mode.
func TestConcurrentOperators(t *testing.T) {
	modes(t, func(t *testing.T, h *Tier, declared func(*series.Table) *series.Table) {
		tab := declared(lastgang("lastgang"))
		for round := range 10 {
			a := meterDay(round, 100)
			b := meterDay(round, 200)
			for i := range b {
				b[i].VersionScope = "9900000000010:2026-03"
			}
			errs := make(chan error, 2)
			start := make(chan struct{})
			for _, rows := range [][]series.Reading{a, b} {
				go func() {
					<-start
					_, err := h.Write(context.Background(), tab, rows)
					errs <- err
				}()
			}
			close(start)
			e1, e2 := <-errs, <-errs
			if (e1 == nil) == (e2 == nil) {
				t.Fatalf("round %d: both or neither won: %v; %v", round, e1, e2)
			}
			if err := cmp.Or(e1, e2); !errors.As(err, new(*series.Error)) || series.IsRetryable(err) && !strings.Contains(err.Error(), "concurrently") {
				t.Fatalf("round %d: loser's error %v", round, err)
			}
		}
	})
}

// TestPointTable writes register readings: one instant each, no resolution.
func TestPointTable(t *testing.T) {
	modes(t, func(t *testing.T, h *Tier, declared func(*series.Table) *series.Table) {
		tab := declared(&series.Table{
			Name:      "register",
			TimeModel: series.Point,
			Commodity: metering.Electricity,
			Width:     series.Monthly,
			Columns:   []series.Column{{Name: "tariff", Identity: true, Values: []string{"HT", "NT"}}},
		})
		reading := func(i int, tariff string, value series.Decimal, version uint64, scope string) series.Reading {
			return series.Reading{MaLo: malo(i), OBIS: "1-1:1.8.0", From: day.Add(6 * time.Hour), Value: value,
				Unit: metering.KilowattHour, Quality: metering.TrueValue, Version: version, VersionScope: scope,
				Extra: map[string]string{"tariff": tariff}}
		}
		const op = "9900000000003:2026-03"
		rows := []series.Reading{reading(1, "HT", 12_345_678_000, 1, op), reading(1, "NT", 2_000_000, 1, op), reading(2, "HT", 5, 1, op)}
		mustWrite(t, h, tab, rows)
		if res := mustWrite(t, h, tab, rows); res.Present != 3 {
			t.Fatalf("redelivery %+v", res)
		}
		refused(t, h, tab, []series.Reading{reading(1, "NT", 2_000_001, 1, op)}, series.IntegrityViolation, 0)
		refused(t, h, tab, []series.Reading{reading(1, "NT", 2_000_001, 2, "9900000000010:2026-03")}, series.IntegrityViolation, 0)
		mustWrite(t, h, tab, []series.Reading{reading(1, "NT", 2_000_001, 2, op)})
		got := scanAll(t, h, tab)
		if len(got) != 4 || got[0].Extra["tariff"] != "HT" || got[0].Value != 12_345_678_000 || !got[0].To.IsZero() || got[2].Version != 2 {
			t.Fatalf("scanned %+v", got)
		}
	})
}

// TestWriteBeginsWhileChecking: Write begins its transaction while it
// checks the rows, and a batch its checks refuse gives up waiting for a
// connection: with every connection of the pool held, a bad batch is
// refused at once, a good one waits for its connection and is written
// once one is free.
func TestWriteBeginsWhileChecking(t *testing.T) {
	h, pool := newTier(t, Options{})
	tab := lastgang("lastgang")
	declare(t, h, tab)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var held []*pgxpool.Conn
	release := func() {
		for _, c := range held {
			c.Release()
		}
		held = nil
	}
	defer release() // before the pool closes, which waits for them
	for range pool.Config().MaxConns {
		c, err := pool.Acquire(ctx)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, c)
	}
	bad := meterDay(1, 1)
	bad[40].Unit = 0
	_, err := h.Write(ctx, tab, bad)
	wantError(t, err, series.InvalidInput, 40)
	if ctx.Err() != nil {
		t.Fatalf("the refusal waited for a connection until its context ended: %v", ctx.Err())
	}

	done := make(chan error, 1)
	go func() {
		_, err := h.Write(ctx, tab, meterDay(2, 1))
		done <- err
	}()
	release()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := len(scanAll(t, h, tab)); n != 96 {
		t.Fatalf("%d readings stored, want 96", n)
	}
}

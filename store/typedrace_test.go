package store

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// TestTypedReadRacesArchival reads one meter's day again and again while
// an archival detaches that day's partition and commits it to the cold
// tier, and finds every reading of the day exactly once each time. First
// with the archival run between the read's cold plan and its hot
// statement, day after day, the interleaving that loses the day where W
// and the hot read disagree; then with the archival running freely
// beside readers.
func TestTypedReadRacesArchival(t *testing.T) {
	ctx := t.Context()
	s := newEnv(t).open(t, Options{})
	const days = 10
	if err := s.CreatePartitions(ctx, dayN(0), dayN(days)); err != nil {
		t.Fatal(err)
	}
	var batch []Reading
	want := map[int][]string{} // meter 0's readings by day
	for d := range days {
		for i := range 3 {
			for _, ch := range []string{"A", "B"} {
				for slot := range 96 {
					r := qh(i, d, slot, ch, 1, int64(d*1000+slot))
					batch = append(batch, r)
					if i == 0 {
						want[d] = append(want[d], typedKey(r))
					}
				}
			}
		}
	}
	mustWrite(t, s, batch)
	for d := range want {
		slices.Sort(want[d])
	}
	day := func(d int) SeriesQuery {
		return SeriesQuery{MaLo: malo(0), OBIS: "1-1:1.29.0", From: dayN(d), To: dayN(d + 1)}
	}
	check := func(what string, d int, rs []Reading) {
		t.Helper()
		got := make([]string, len(rs))
		for i, r := range rs {
			got[i] = typedKey(r)
		}
		slices.Sort(got)
		if !slices.Equal(got, want[d]) {
			t.Fatalf("%s: day %d: %d readings, want %d, each once: %s", what, d, len(got), len(want[d]), firstDiff(got, want[d]))
		}
	}
	archive := func(d int) { archiveDay(t, s, d) }

	// The archival of day d between the plan, which saw W at day d, and
	// the hot statement.
	for d := range 5 {
		s.typedHook = func() { s.typedHook = nil; archive(d) }
		res, err := s.SeriesRead(ctx, "power", day(d))
		if err != nil {
			t.Fatalf("day %d: %v", d, err)
		}
		if s.typedHook != nil {
			t.Fatal("the read did not reach its hot statement")
		}
		check("archived between plan and hot read", d, res.Readings)
		if !slices.Equal(res.Read.Tiers, []string{"cold"}) || !res.Read.Watermark.Equal(dayN(d+1)) {
			t.Fatalf("day %d: tiers %v, W %s; want the cold tier at the new W", d, res.Read.Tiers, res.Read.Watermark)
		}
	}

	// Free: readers of the day being archived beside the archival.
	readBesideArchivals(t, 5, days-2, archive, want, func(d int) ([]string, error) {
		rs, err := s.SeriesReadings(ctx, "power", day(d))
		got := make([]string, len(rs))
		for i, r := range rs {
			got[i] = typedKey(r)
		}
		slices.Sort(got)
		return got, err
	})
}

// fiveDays returns a store whose power table holds meter 0's quarter
// hours of channel A for days 0 to 4, the value of slot n of day d
// d*1000+n, all hot.
func fiveDays(t *testing.T) *Store {
	s := newEnv(t).open(t, Options{})
	if err := s.CreatePartitions(t.Context(), dayN(0), dayN(6)); err != nil {
		t.Fatal(err)
	}
	var batch []Reading
	for d := range 5 {
		for slot := range 96 {
			batch = append(batch, qh(0, d, slot, "A", 1, int64(d*1000+slot)))
		}
	}
	mustWrite(t, s, batch)
	return s
}

// archiveDay archives power's day d, which moves W to its end.
func archiveDay(t *testing.T, s *Store, d int) {
	out, err := s.Archive(t.Context(), "power", dayN(d+1).Add(testArchive.SettlementLag))
	if err != nil || !out.Watermark.Equal(dayN(d+1)) {
		t.Errorf("archive of day %d: %+v, %v", d, out, err)
	}
}

// readBesideArchivals has two readers read each day from first to before
// end with read while archive archives it, and fails unless every answer
// is the day's want, each reading once; a read refused in flight
// (ErrInFlight) is no wrong answer.
func readBesideArchivals(t *testing.T, first, end int, archive func(int), want map[int][]string, read func(d int) ([]string, error)) {
	t.Helper()
	var (
		wg            sync.WaitGroup
		mu            sync.Mutex
		reads, flight int
		failed        error
	)
	for d := first; d < end; d++ {
		stop := make(chan struct{})
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for n := 0; n < 200; n++ {
					select {
					case <-stop:
						if n > 0 {
							return
						}
					default:
					}
					got, err := read(d)
					mu.Lock()
					switch {
					case errors.Is(err, ErrInFlight):
						flight++ // refused, retryably: never a wrong answer
					case err != nil:
						failed = errors.Join(failed, fmt.Errorf("day %d: %w", d, err))
					default:
						reads++
						if !slices.Equal(got, want[d]) {
							failed = errors.Join(failed, fmt.Errorf("day %d: %d readings, want %d each once: %s", d, len(got), len(want[d]), firstDiff(got, want[d])))
						}
					}
					mu.Unlock()
				}
			}()
		}
		time.Sleep(10 * time.Millisecond)
		archive(d)
		close(stop)
		wg.Wait()
	}
	if failed != nil {
		t.Fatal(failed)
	}
	if reads == 0 {
		t.Fatal("no read answered")
	}
	t.Logf("%d reads beside archivals answered exactly, %d refused in flight", reads, flight)
}

// typedKey names a reading by what must be seen once: its merge key,
// version and value.
func typedKey(r Reading) string {
	return fmt.Sprintf("%s %s %s v%d %d", r.MaLo, r.Extra["channel"], r.From.UTC().Format(time.RFC3339), r.Version, r.Value)
}

// TestTypedReadAfterCommit: what a typed read keeps between reads (the
// cold state loaded, the plan per snapshot, the files' footers and page
// indexes) lets no read see a state older than the last commit: a read
// after an archival reads the new W and the day from the cold tier, and
// one after a late correction below W sees the correction, also where it
// reads the hot tier too, in one statement that proves the kept state
// current (a late correction leaves W where it was).
func TestTypedReadAfterCommit(t *testing.T) {
	ctx := t.Context()
	s := fiveDays(t)
	q := SeriesQuery{MaLo: malo(0), OBIS: "1-1:1.29.0", From: dayN(1), To: dayN(3)}
	read := func(what string, tiers []string, w time.Time, value int64) {
		t.Helper()
		for range 2 { // the second from what the first kept
			res, err := s.SeriesRead(ctx, "power", q)
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			rs := res.Readings
			if len(rs) != 192 || int64(rs[100].Value) != value || !slices.Equal(res.Read.Tiers, tiers) || !res.Read.Watermark.Equal(w) {
				t.Fatalf("%s: %d readings, day 2 slot 4 %v, tiers %v, W %s; want 192, %d, %v, %s",
					what, len(rs), rs[100].Value, res.Read.Tiers, res.Read.Watermark, value, tiers, w)
			}
		}
	}
	// Days 2 and 3 across W at day 3: the cold plan from the kept state.
	both := SeriesQuery{MaLo: malo(0), OBIS: "1-1:1.29.0", From: dayN(2), To: dayN(4)}
	readBoth := func(what string, value int64) {
		t.Helper()
		for range 2 {
			res, err := s.SeriesRead(ctx, "power", both)
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			rs := res.Readings
			if len(rs) != 192 || int64(rs[4].Value) != value || !slices.Equal(res.Read.Tiers, []string{"cold", "hot"}) {
				t.Fatalf("%s: %d readings, day 2 slot 4 %v, tiers %v; want 192, %d, cold and hot",
					what, len(rs), rs[4].Value, res.Read.Tiers, value)
			}
		}
	}
	if _, err := s.Archive(ctx, "power", dayN(4)); err != nil {
		t.Fatal(err)
	}
	read("W at day 2", []string{"cold", "hot"}, dayN(2), 2004)
	if _, err := s.Archive(ctx, "power", dayN(5)); err != nil {
		t.Fatal(err)
	}
	read("after the archival of day 2", []string{"cold"}, dayN(3), 2004)
	readBoth("across W", 2004)
	mustWrite(t, s, []Reading{qh(0, 2, 4, "A", 2, 99)})
	readBoth("across W after a late correction of day 2", 99)
	read("after a late correction of day 2", []string{"cold"}, dayN(3), 99)
	latest, ok, err := s.LatestReading(ctx, "power", SeriesQuery{MaLo: malo(0), OBIS: "1-1:1.29.0"})
	if err != nil || !ok || !latest.From.Equal(dayN(4).Add(95*15*time.Minute)) {
		t.Fatalf("latest: %v %v %v", latest.From, ok, err)
	}
}

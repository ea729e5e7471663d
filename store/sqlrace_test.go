package store

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

// sqlDay is the SQL read of meter 0's day d, each column as text, so
// that a row reads the same from either tier.
func sqlDay(d int) string {
	return fmt.Sprintf(`SELECT malo_id, channel, CAST("from" AS VARCHAR), CAST(version AS VARCHAR), CAST(value AS VARCHAR)
FROM readings WHERE malo_id = '%s' AND "from" >= '%s' AND "from" < '%s'`,
		malo(0), dayN(d).Format(time.RFC3339), dayN(d+1).Format(time.RFC3339))
}

// sqlKeys returns the rows of res as sorted text.
func sqlKeys(res *Result) []string {
	out := make([]string, len(res.Rows))
	for i, r := range res.Rows {
		out[i] = fmt.Sprint(r...)
	}
	slices.Sort(out)
	return out
}

// TestSQLReadRacesArchival reads one meter's day through SQL again and
// again while an archival detaches that day's partition and commits it,
// and finds every reading of the day exactly once each time. First with
// the archival run between the statement's read of W and its hot
// snapshot, day after day, the interleaving that loses the day where W
// and the hot snapshot disagree (a hot snapshot without the detached
// partition and a W below it); then with the archival running freely
// beside readers. The same statements are asked again and again, so that
// what the engine keeps between statements is used.
func TestSQLReadRacesArchival(t *testing.T) {
	ctx := t.Context()
	s := newEnv(t).open(t, Options{})
	const days = 10
	if err := s.CreatePartitions(ctx, dayN(0), dayN(days)); err != nil {
		t.Fatal(err)
	}
	var batch []Reading
	for d := range days {
		for i := range 3 {
			for _, ch := range []string{"A", "B"} {
				for slot := range 96 {
					batch = append(batch, qh(i, d, slot, ch, 1, int64(d*1000+slot)))
				}
			}
		}
	}
	mustWrite(t, s, batch)
	want := map[int][]string{} // meter 0's rows by day, all hot
	for d := range days {
		res, err := s.Query(ctx, "power", sqlDay(d))
		if err != nil {
			t.Fatal(err)
		}
		if want[d] = sqlKeys(res); len(want[d]) != 192 {
			t.Fatalf("day %d: %d rows before any archival, want 192", d, len(want[d]))
		}
	}
	archive := func(d int) { archiveDay(t, s, d) }

	// The archival of day d between the read of W, at day d, and the
	// hot snapshot.
	for d := range 5 {
		s.sqlHook = func() { s.sqlHook = nil; archive(d) }
		res, err := s.Query(ctx, "power", sqlDay(d))
		if err != nil {
			t.Fatalf("day %d: %v", d, err)
		}
		if s.sqlHook != nil {
			t.Fatal("the statement did not read W")
		}
		if got := sqlKeys(res); !slices.Equal(got, want[d]) {
			t.Fatalf("archived between W and the hot snapshot: day %d: %d rows, want %d, each once: %s", d, len(got), len(want[d]), firstDiff(got, want[d]))
		}
		if !slices.Equal(res.Tiers, []string{"cold"}) || !res.Watermark.Equal(dayN(d+1)) {
			t.Fatalf("day %d: tiers %v, W %s; want the cold tier at the new W", d, res.Tiers, res.Watermark)
		}
	}

	// Free: readers of the day being archived beside the archival.
	readBesideArchivals(t, 5, days-2, archive, want, func(d int) ([]string, error) {
		res, err := s.Query(ctx, "power", sqlDay(d))
		if err != nil {
			return nil, err
		}
		return sqlKeys(res), nil
	})
}

// TestSQLReadAfterCommit: what the engine keeps between statements (the
// analysis of a statement asked again) lets no statement see a state
// older than the last commit: after an archival the same statement reads
// the new W and the day from the cold tier, and after a late correction
// below W it sees the correction.
func TestSQLReadAfterCommit(t *testing.T) {
	ctx := t.Context()
	s := fiveDays(t)
	text := fmt.Sprintf(`SELECT CAST(value AS VARCHAR) FROM readings WHERE malo_id = '%s' AND "from" >= '%s' AND "from" < '%s' ORDER BY "from"`,
		malo(0), dayN(1).Format(time.RFC3339), dayN(3).Format(time.RFC3339))
	read := func(what string, tiers []string, w time.Time, value string) {
		t.Helper()
		for range 2 { // the second from what the first kept
			res, err := s.Query(ctx, "power", text)
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if len(res.Rows) != 192 || fmt.Sprint(res.Rows[100][0]) != value || !slices.Equal(res.Tiers, tiers) || !res.Watermark.Equal(w) {
				got := "none"
				if len(res.Rows) > 100 {
					got = fmt.Sprint(res.Rows[100][0])
				}
				t.Fatalf("%s: %d rows, day 2 slot 4 %s, tiers %v, W %s; want 192, %s, %v, %s",
					what, len(res.Rows), got, res.Tiers, res.Watermark, value, tiers, w)
			}
		}
	}
	read("all hot", []string{"hot"}, time.Time{}, "0.002004")
	if _, err := s.Archive(ctx, "power", dayN(4)); err != nil {
		t.Fatal(err)
	}
	read("W at day 2", []string{"cold", "hot"}, dayN(2), "0.002004")
	if _, err := s.Archive(ctx, "power", dayN(5)); err != nil {
		t.Fatal(err)
	}
	read("after the archival of day 2", []string{"cold"}, dayN(3), "0.002004")
	mustWrite(t, s, []Reading{qh(0, 2, 4, "A", 2, 99)})
	read("after a late correction of day 2", []string{"cold"}, dayN(3), "0.000099")
}

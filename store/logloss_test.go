package store

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meterstore/meterstore/internal/cold"
)

// newestEntry returns the path of the newest entry of table name's log.
func newestEntry(t *testing.T, dir, name string) string {
	t.Helper()
	es, err := filepath.Glob(filepath.Join(dir, "_log", "*meterstore."+name, "e", "*"))
	if err != nil || len(es) == 0 {
		t.Fatalf("log entries of %s: %v, %v", name, es, err)
	}
	slices.Sort(es)
	return es[len(es)-1]
}

// TestFaultLogLostNewestEntry deletes the newest entry of power's log on
// the warehouse, the commit that moved W from day 3 to day 4. Invariant 2:
// the archival ledger in PostgreSQL remembers day 4, so the shortened log
// is detected and never obeyed. The watermark read, status, archival, a
// query needing the cold tier and a write below the recorded W all fail
// with a non-retryable invariant violation naming both watermarks; nothing
// is archived again and no partition is dropped; rows at or above the
// recorded W are still ingested and answered from the hot tier; gas is
// untouched. Once the entry is restored, every acknowledged reading is
// there exactly once.
func TestFaultLogLostNewestEntry(t *testing.T) {
	ctx := t.Context()
	e := newEnvOn(t, LogObjectStore)
	s := e.open(t, Options{Tables: []Table{power(), gasDaily()}})
	if err := s.CreatePartitions(ctx, dayN(0), dayN(10)); err != nil {
		t.Fatal(err)
	}
	a := acked{}
	for d := range 6 {
		a.write(t, s, "power", []Reading{qh(1, d, 4, "A", 1, 1000), qh(2, d, 5, "B", 1, 2000)})
		a.write(t, s, "gas", []Reading{gasDay(1, d, 1, 30000)})
	}
	for _, name := range []string{"power", "gas"} {
		if out, err := s.Archive(ctx, name, dayN(6)); err != nil || !out.Watermark.Equal(dayN(4)) {
			t.Fatalf("archive %s: %+v, %v", name, out, err)
		}
	}

	entry := newestEntry(t, e.dir, "power")
	saved, err := os.ReadFile(entry)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(entry); err != nil {
		t.Fatal(err)
	}
	// The log, read on its own, now says day 3.
	ice, err := s.cold.Iceberg(ctx, s.tables[0].cold)
	if err != nil {
		t.Fatal(err)
	}
	if w, _, err := cold.Watermark(ice.Metadata()); err != nil || !w.Equal(dayN(3)) {
		t.Fatalf("W in the shortened log: %v, %v; want day 3", w, err)
	}

	// The archived days' partitions are gone, as after the reader grace:
	// no detached partition tells a read from the shortened log's W that
	// its rows left the hot tier.
	for d := range 4 {
		if err := s.hot.Drop(ctx, s.tables[0].decl, dayN(d)); err != nil {
			t.Fatalf("drop day %d: %v", d, err)
		}
	}

	wantRegression := func(op string, err error) {
		t.Helper()
		var inv *InvariantError
		var reg *WatermarkRegression
		switch {
		case !errors.As(err, &inv) || !errors.As(err, &reg):
			t.Errorf("%s: %v, want an invariant violation", op, err)
		case IsRetryable(err):
			t.Errorf("%s: %v is retryable", op, err)
		case !reg.Expected.Equal(dayN(4)) || !reg.Found.Equal(dayN(3)) ||
			!strings.Contains(err.Error(), cold.FormatTime(dayN(4))) || !strings.Contains(err.Error(), cold.FormatTime(dayN(3))):
			t.Errorf("%s: %v, want day 4 expected and day 3 found named", op, err)
		}
	}
	for _, st := range []*Store{s, e.open(t, Options{Tables: []Table{power(), gasDaily()}})} {
		_, _, err := st.Watermark(ctx, "power")
		wantRegression("watermark", err)

		sts := st.Status(ctx, dayN(7))
		if sts[0].Healthy {
			t.Errorf("status of power with a shortened log: healthy")
		}
		wantRegression("status", sts[0].Err)
		if !sts[1].Healthy {
			t.Errorf("status of gas: %+v", sts[1])
		}

		out, err := st.Archive(ctx, "power", dayN(8))
		wantRegression("archive", err)
		if out.Status != ArchiveFailed || len(out.Windows) != 0 || len(out.Dropped) != 0 || len(out.Violations) != 1 {
			t.Errorf("archive outcome: %+v", out)
		}
		// The maintenance loop reports it, and keeps serving gas.
		m := st.Maintenance().Cycle(ctx, dayN(7))
		if f := m.Failures(); len(f) != 1 || f[0].Name != "power" {
			t.Errorf("cycle failures %+v, want power alone", f)
		}
		if _, err := st.ReassertWatermark(ctx, "power"); err == nil {
			t.Errorf("reassert on a shortened log: no error")
		}
		if _, err := st.ExpireSnapshots(ctx, "power", dayN(7)); err == nil {
			t.Errorf("expiry on a shortened log: no error")
		}

		_, err = st.Query(ctx, "power", `SELECT count(*) FROM readings`)
		wantRegression("query over both tiers", err)
		if !errors.Is(err, ErrColdUnreachable) {
			t.Errorf("query: %v, want it to wrap ErrColdUnreachable", err)
		}
		// An SQL read of the days from the shortened log's W on needs no
		// cold file: the ledger's watermark read in its hot snapshot does
		// not vouch for day 3, and the read, started over with the
		// ledger read first, fails; answered, it would miss day 3's rows
		// that the lost commit archived.
		_, err = st.Query(ctx, "power", `SELECT count(*) FROM readings WHERE "from" >= `+ts(dayN(3)))
		wantRegression("query from the shortened log's W", err)
		// The typed read, over both tiers and over the cold tier alone:
		// the ledger's watermark it reads beside its hot rows, or after
		// its plan, does not vouch for day 3, and the vetted read fails.
		for _, to := range []time.Time{dayN(6), dayN(2)} {
			_, err = st.SeriesReadings(ctx, "power", SeriesQuery{MaLo: malo(1), OBIS: "1-1:1.29.0", From: dayN(0), To: to})
			var reg *WatermarkRegression
			if !errors.As(err, &reg) || !reg.Expected.Equal(dayN(4)) || !reg.Found.Equal(dayN(3)) {
				t.Errorf("typed read to %s: %v, want the regression from day 4 to day 3", to, err)
			}
		}
		for _, r := range []Reading{qh(3, 1, 4, "A", 1, 1000), qh(3, 3, 6, "A", 1, 1000)} {
			_, err = st.Write(ctx, "power", []Reading{r})
			wantRegression("write at "+r.From.String(), err)
		}
	}
	// At and above the recorded W, PostgreSQL holds every row: it ingests
	// and answers.
	a.write(t, s, "power", []Reading{qh(3, 4, 7, "A", 1, 1000), qh(3, 6, 7, "A", 1, 1000)})
	res, err := s.Query(ctx, "power", `SELECT count(*) FROM readings WHERE "from" >= `+ts(dayN(4)))
	if err != nil || res.Rows[0][0] != int64(6) || !slices.Equal(res.Tiers, []string{"hot"}) {
		t.Errorf("query at and above the recorded W: %v, %v", res, err)
	}
	if _, err := s.Write(ctx, "gas", []Reading{gasDay(2, 6, 1, 30000)}); err != nil {
		t.Errorf("gas write: %v", err)
	}
	a["gas"] = append(a["gas"], gasDay(2, 6, 1, 30000))
	if out, err := s.Archive(ctx, "gas", dayN(7)); err != nil || !out.Watermark.Equal(dayN(5)) {
		t.Errorf("gas archive: %+v, %v", out, err)
	}

	// Nothing was committed to the shortened log; restoring the entry
	// brings day 4 back, and archival goes on from there.
	if _, err := os.Stat(entry); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("something was committed at the lost entry's place: %v", err)
	}
	if err := os.WriteFile(entry, saved, 0o444); err != nil {
		t.Fatal(err)
	}
	if w, _, err := s.Watermark(ctx, "power"); err != nil || !w.Equal(dayN(4)) {
		t.Fatalf("W after the restore: %v, %v", w, err)
	}
	if out, err := s.Archive(ctx, "power", dayN(8)); err != nil || !out.Watermark.Equal(dayN(6)) || !out.Healthy() {
		t.Errorf("archive after the restore: %+v, %v", out, err)
	}
	if sts := s.Status(ctx, dayN(8)); !sts[0].Healthy {
		t.Errorf("status after the restore: %+v", sts[0])
	}
	for _, name := range []string{"power", "gas"} {
		a.check(t, s, name)
	}
}

// TestWatermarkReadDuringArchival: a reader that reads W while an archival
// commits the next window is not told the log lost entries. Read first, W
// is day 3; the archival then commits day 4 and records it in the ledger.
// Vetting W after its read (CheckWatermark, the order every reader used)
// takes the ledger's day 4 for a regression; VetWatermark reads the ledger
// first and passes the day 3 it then reads.
func TestWatermarkReadDuringArchival(t *testing.T) {
	ctx := t.Context()
	s := newEnv(t).open(t, Options{})
	if err := s.CreatePartitions(ctx, dayN(0), dayN(10)); err != nil {
		t.Fatal(err)
	}
	for d := range 6 {
		mustWrite(t, s, []Reading{qh(1, d, 4, "A", 1, 1000)})
	}
	if out, err := s.Archive(ctx, "power", dayN(5)); err != nil || !out.Watermark.Equal(dayN(3)) {
		t.Fatalf("archive: %+v, %v", out, err)
	}
	ct := s.tables[0].cold
	day := 5
	readThenArchive := func(ctx context.Context) (time.Time, bool, error) {
		w, ok, err := s.cold.Watermark(ctx, ct)
		if err != nil {
			return w, ok, err
		}
		day++
		if out, err := s.Archive(ctx, "power", dayN(day)); err != nil || !out.Watermark.Equal(dayN(day-2)) {
			t.Fatalf("archive at day %d: %+v, %v", day, out, err)
		}
		return w, ok, nil
	}
	w, ok, err := readThenArchive(ctx)
	if err := s.arch.CheckWatermark(ctx, "power", w, ok); !errors.As(err, new(*WatermarkRegression)) {
		t.Fatalf("W read before a commit, vetted after it: %v; want the false regression this test guards against", err)
	}
	if w, _, err = s.arch.VetWatermark(ctx, "power", readThenArchive); err != nil || !w.Equal(dayN(4)) {
		t.Fatalf("VetWatermark across an archival: W %v, %v; want day 4 and no error", w, err)
	}
}

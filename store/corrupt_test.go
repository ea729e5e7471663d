package store

import (
	"os"
	"strings"
	"testing"
)

// TestFaultLogCorruptEntry overwrites the newest entry of power's log with
// garbage, once shorter than an entry's header and once a header followed
// by text that is no commit. Either is a permanent error that says the
// entry is corrupt, never a transient one, for everything that reads the
// log, a late correction included; rows at or above the watermark the
// store last read still go to PostgreSQL, and gas goes on; restored,
// every acknowledged reading is there exactly once.
func TestFaultLogCorruptEntry(t *testing.T) {
	ctx := t.Context()
	e := newEnvOn(t, LogObjectStore)
	s := e.open(t, Options{Tables: []Table{power(), gasDaily()}})
	if err := s.CreatePartitions(ctx, dayN(0), dayN(10)); err != nil {
		t.Fatal(err)
	}
	a := acked{}
	for d := range 4 {
		a.write(t, s, "power", []Reading{qh(1, d, 4, "A", 1, 1000)})
		a.write(t, s, "gas", []Reading{gasDay(1, d, 1, 30000)})
	}
	if _, err := s.Archive(ctx, "power", dayN(4)); err != nil {
		t.Fatal(err)
	}
	entry := newestEntry(t, e.dir, "power")
	saved, err := os.ReadFile(entry)
	if err != nil {
		t.Fatal(err)
	}
	for _, garbage := range [][]byte{[]byte("garbage"), append(saved[:32:32], "{not a commit"...)} {
		if err := os.Chmod(entry, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(entry, garbage, 0o644); err != nil {
			t.Fatal(err)
		}
		check := func(op string, err error) {
			t.Helper()
			if err == nil || IsRetryable(err) || !strings.Contains(err.Error(), "corrupt") {
				t.Errorf("%s with a corrupt log entry (%d bytes): %v (retryable %v), want a permanent error naming the corruption",
					op, len(garbage), err, IsRetryable(err))
			}
		}
		_, _, err := s.Watermark(ctx, "power")
		check("watermark", err)
		_, err = s.Write(ctx, "power", []Reading{qh(2, 5, 4, "A", 1, 1000), qh(2, 0, 4, "A", 2, 1000)})
		check("write with a late correction", err)
		a.write(t, s, "power", []Reading{qh(2, 5+len(garbage)%3, 4, "A", 1, 1000)})
		_, err = s.Query(ctx, "power", `SELECT count(*) FROM readings`)
		check("query", err)
		_, err = s.Archive(ctx, "power", dayN(5))
		check("archive", err)
		check("status", s.Status(ctx, dayN(5))[0].Err)
		if _, err := Open(ctx, Options{Pool: e.pool, Catalog: e.cat, Tables: []Table{power(), gasDaily()}, Archive: testArchive}); err != nil {
			t.Errorf("open: %v", err)
		}
		a.write(t, s, "gas", []Reading{gasDay(2, len(garbage)%3, 1, 30000)})
	}
	if err := os.WriteFile(entry, saved, 0o444); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"power", "gas"} {
		if out, err := s.Archive(ctx, name, dayN(6)); err != nil || !out.Healthy() {
			t.Errorf("archive %s after the repair: %+v, %v", name, out, err)
		}
		a.check(t, s, name)
	}
}

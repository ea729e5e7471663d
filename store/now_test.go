package store

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// TestNowIsSane: a now past the wall clock plus the clock skew, before
// 1970 or before a table's watermark is refused by every call that takes
// one, as a permanent error that names the bound, and changes nothing. A
// far-future now once archived one window from the watermark to 9999 and
// created partitions there; the zero time attached year-0001 partitions.
func TestNowIsSane(t *testing.T) {
	ctx := t.Context()
	wall := dayN(30)
	s := newEnv(t).open(t, Options{Tables: []Table{power(), gasDaily()}, Now: NowOptions{WallClock: func() time.Time { return wall }}})
	refused := func(what string, err error, bound string) {
		t.Helper()
		if !errors.Is(err, ErrNowOutOfRange) || IsRetryable(err) || !strings.Contains(err.Error(), bound) {
			t.Errorf("%s: %v (retryable %v); want a permanent ErrNowOutOfRange naming %q", what, err, IsRetryable(err), bound)
		}
	}
	far := time.Date(9999, 12, 30, 0, 0, 0, 0, time.UTC)
	for _, now := range []time.Time{far, wall.Add(DefaultMaxClockSkew + time.Second), {}, time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC)} {
		bound := "max_clock_skew 1d"
		if now.Before(wall) {
			bound = "1970-01-01"
		}
		_, err := s.Archive(ctx, "power", now)
		refused("Archive at "+now.String(), err, bound)
		refused("EnsurePartitions at "+now.String(), s.EnsurePartitions(ctx, now), bound)
		_, err = s.ExpireSnapshots(ctx, "power", now)
		refused("ExpireSnapshots at "+now.String(), err, bound)
		out := s.Maintenance().Cycle(ctx, now)
		if len(out.Tables) != 2 {
			t.Fatalf("cycle at %v: %d tables", now, len(out.Tables))
		}
		for _, to := range out.Tables {
			refused("Cycle at "+now.String()+" of "+to.Table, to.Err, bound)
			if to.Healthy() || to.Archive.Status != ArchiveFailed {
				t.Errorf("cycle at %v: %s healthy %v, archive %s", now, to.Table, to.Healthy(), to.Archive.Status)
			}
		}
		for _, st := range s.Status(ctx, now) {
			refused("Status at "+now.String()+" of "+st.Table, st.Err, bound)
			if st.Healthy || st.WatermarkLag != 0 {
				t.Errorf("status at %v: %+v", now, st)
			}
		}
	}
	parts, err := s.hot.Partitions(ctx, s.tables[0].decl)
	if err != nil || len(parts) != 0 {
		t.Fatalf("a refused now created partitions: %+v (%v)", parts, err)
	}

	// Within the skew, now is accepted.
	if err := s.CreatePartitions(ctx, dayN(0), dayN(29)); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, s, []Reading{qh(1, 3, 10, "A", 1, 1000)})
	if out := s.Maintenance().Cycle(ctx, wall.Add(12*time.Hour)); !out.Healthy() {
		t.Fatalf("cycle within the skew: %v", out.Failures())
	}
	w, ok, err := s.Watermark(ctx, "power")
	if err != nil || !ok || w.After(wall) {
		t.Fatalf("W %v %v %v after a cycle at the wall clock", w, ok, err)
	}
	// Before the newest archived window's end, now is nonsense: the
	// window was archived at least the settlement lag after it.
	before := w.Add(-time.Hour)
	_, err = s.Archive(ctx, "power", before)
	refused("Archive before W", err, "watermark "+w.Format(time.RFC3339))
	refused("EnsurePartitions before W", s.EnsurePartitions(ctx, before), "watermark")
	for _, to := range s.Maintenance().Cycle(ctx, before).Tables {
		refused("Cycle before W of "+to.Table, to.Err, "watermark")
	}
	for _, st := range s.Status(ctx, before) {
		refused("Status before W of "+st.Table, st.Err, "watermark")
		if st.Healthy || st.WatermarkLag < 0 {
			t.Errorf("status before W: %+v", st)
		}
	}
	// Between W and W plus the lag, nothing is due: not an error.
	if out, err := s.Archive(ctx, "power", w.Add(time.Hour)); err != nil || out.Status != ArchiveNothingDue {
		t.Errorf("archive between W and W+lag: %s, %v", out.Status, err)
	}
	if w2, _, _ := s.Watermark(ctx, "power"); !w2.Equal(w) {
		t.Errorf("W moved from %v to %v", w, w2)
	}

	// The skew is an option.
	s2 := newEnv(t).open(t, Options{Now: NowOptions{MaxClockSkew: time.Hour, WallClock: func() time.Time { return wall }}})
	_, err = s2.Archive(ctx, "power", wall.Add(2*time.Hour))
	refused("Archive past a skew of 1h", err, "max_clock_skew 1h")
	if _, err := s2.Archive(ctx, "power", wall.Add(30*time.Minute)); err != nil {
		t.Errorf("Archive within a skew of 1h: %v", err)
	}
}

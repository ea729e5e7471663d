package store

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestStatusReportsStrayDetach: a partition above W detached by a DBA,
// through a connection of their own, makes the table unhealthy in Status
// with an *InvariantError naming it, and archival stops below it.
func TestStatusReportsStrayDetach(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t)
	s := e.open(t, Options{})
	if err := s.CreatePartitions(ctx, dayN(0), dayN(6)); err != nil {
		t.Fatal(err)
	}
	for d := range 6 {
		mustWrite(t, s, []Reading{qh(1, d, 4, "A", 1, 1000)})
	}
	if st := s.Status(ctx, dayN(6))[0]; !st.Healthy || st.Err != nil {
		t.Fatalf("status before the detach: %+v", st)
	}
	cfg, err := pgx.ParseConfig(e.pool.Config().ConnString())
	if err != nil {
		t.Fatal(err)
	}
	dba, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer dba.Close(context.WithoutCancel(ctx))
	const stray = "power_p20260305" // day 3
	if _, err := dba.Exec(ctx, `ALTER TABLE meterstore.power DETACH PARTITION meterstore.`+stray); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		st := s.Status(ctx, dayN(6))[0]
		var inv *InvariantError
		if st.Healthy || !errors.As(st.Err, &inv) || !strings.Contains(st.Err.Error(), stray) {
			t.Errorf("status %s: healthy %v, %v; want the detached partition reported", when, st.Healthy, st.Err)
		}
	}
	check("after the detach")
	out, err := s.Archive(ctx, "power", dayN(6))
	if err != nil {
		t.Fatal(err)
	}
	if !out.Watermark.Equal(dayN(3)) || len(out.Violations) != 1 || !strings.Contains(out.Violations[0], stray) {
		t.Fatalf("archive: %+v; want W at day 3 and the detached partition reported", out)
	}
	check("after the archival")
	if w, _, err := s.Watermark(ctx, "power"); err != nil || !w.Equal(dayN(3)) {
		t.Errorf("W %v, %v; want day 3", w, err)
	}
}

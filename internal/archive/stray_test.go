package archive

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
)

// TestStrayDetachIsReportedNotArchived detaches a partition above W by
// hand, through a connection of its own as a DBA would: the archiver must
// not take it for an interrupted archival. It reports it, archives the
// windows below it, and W stops at its start; its rows stay where they
// are. A partition that the ledger records as detached by an archival is
// still resumed, in the same cycles, ahead of the settlement lag.
func TestStrayDetachIsReportedNotArchived(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t, 8) // days 0 to 7
	o := newOracle()
	fill(t, e, o, 2, 0, 1, 2, 3, 4, 5, 6, 7)
	a := e.archiver(t, Config{SettlementLag: dayConfig.SettlementLag, Step: dayConfig.Step, MaxWindowsPerCycle: 10})

	dba, err := pgx.Connect(ctx, e.url)
	if err != nil {
		t.Fatal(err)
	}
	defer dba.Close(context.WithoutCancel(ctx))
	if _, err := dba.Exec(ctx, `ALTER TABLE meterstore.lastgang DETACH PARTITION meterstore.lastgang_p20260305`); err != nil {
		t.Fatal(err)
	}
	const stray = "lastgang_p20260305" // day 3

	// Days 0 to 2 are archived, W stops at day 3, the stray partition is
	// reported, and nothing past it is touched although days 3 to 5 are
	// due at day 7.
	for i, now := range []int{7, 7, 9} {
		out, err := a.Cycle(ctx, e.t, e.ct, dayN(now))
		if err != nil {
			t.Fatalf("cycle %d: %v", i, err)
		}
		if !out.Watermark.Equal(dayN(3)) || out.Healthy() || len(out.Violations) != 1 || !strings.Contains(out.Violations[0], stray) {
			t.Fatalf("cycle %d: %+v; want W at day 3 and the stray partition reported", i, out)
		}
		if i == 0 && len(out.Windows) != 3 {
			t.Fatalf("cycle 0: windows %+v, want days 0 to 2", out.Windows)
		}
		if i > 0 && len(out.Windows) != 0 {
			t.Fatalf("cycle %d archived %+v past the stray partition", i, out.Windows)
		}
	}
	parts, err := e.hot.Partitions(ctx, e.t)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range parts {
		day := int(p.From.Sub(dayN(0)).Hours() / 24)
		switch {
		case p.Name == stray:
			if p.Attached {
				t.Errorf("the stray partition was attached again")
			}
			if n, err := e.hot.CountRows(ctx, p); err != nil || n != 2*96 {
				t.Errorf("the stray partition holds %d rows (%v), want %d", n, err, 2*96)
			}
		case day > 3 && !p.Attached:
			t.Errorf("partition %s past the stray one was detached", p.Name)
		}
	}
	pc, err := a.CheckPartitions(ctx, e.t, e.ct)
	if err != nil {
		t.Fatal(err)
	}
	if pc.InFlight != 0 || len(pc.Problems) != 1 || !strings.Contains(pc.Problems[0], stray) {
		t.Errorf("check: %+v; want the stray partition as the one problem", pc)
	}

	// An archival that detached day 3 would have recorded it first: with
	// that record, the next cycle resumes it, and goes on with the days
	// due after it.
	if err := a.ledger.detaching(ctx, e.t.Name, dayN(3), dayN(9)); err != nil {
		t.Fatal(err)
	}
	out, err := a.Cycle(ctx, e.t, e.ct, dayN(9))
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Windows) == 0 || !out.Windows[0].Recovered || !out.Windows[0].To.Equal(dayN(4)) ||
		!out.Watermark.Equal(dayN(8)) || len(out.Violations) != 0 {
		t.Fatalf("after the ledger records day 3: %+v; want it resumed first, then W at day 8", out)
	}
	checkTiers(t, e, o.snapshot())
}

// TestResumeStopsAtHorizon resumes an interrupted archival whose detached
// partition lies beyond attached ones that are not settled: the attached
// ones are not archived with it before they are due.
func TestResumeStopsAtHorizon(t *testing.T) {
	ctx := t.Context()
	e := newEnv(t, 6)
	o := newOracle()
	fill(t, e, o, 1, 0, 1, 2, 3, 4, 5)
	a := e.archiver(t, Config{SettlementLag: dayConfig.SettlementLag, Step: dayConfig.Step, MaxWindowsPerCycle: 10})
	if out, err := a.Cycle(ctx, e.t, e.ct, dayN(2)); err != nil || !out.Watermark.Equal(dayN(1)) {
		t.Fatalf("first cycle: %+v, %v; want W at day 1", out, err)
	}
	// An archival recorded day 4 and detached it: the ledger knows it.
	if err := a.ledger.detaching(ctx, e.t.Name, dayN(4), dayN(2)); err != nil {
		t.Fatal(err)
	}
	if err := e.hot.Detach(ctx, e.t, dayN(4)); err != nil {
		t.Fatal(err)
	}
	// At day 3 only day 1 is settled: day 2 ends after the horizon.
	out, err := a.Cycle(ctx, e.t, e.ct, dayN(3))
	if err != nil {
		t.Fatal(err)
	}
	if !out.Watermark.Equal(dayN(2)) || len(out.Violations) != 0 {
		t.Fatalf("cycle at day 3: %+v; want W at day 2, not past the horizon", out)
	}
	parts, err := e.hot.Partitions(ctx, e.t)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range parts {
		if !p.From.Before(dayN(2)) && !p.From.Equal(dayN(4)) && !p.Attached {
			t.Errorf("partition %s, not settled, was detached", p.Name)
		}
	}
	// Once days 2 and 3 are settled, the resumed window takes them and
	// day 4.
	out, err = a.Cycle(ctx, e.t, e.ct, dayN(5))
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Windows) == 0 || !out.Windows[0].Recovered || !out.Windows[0].To.Equal(dayN(5)) || len(out.Violations) != 0 {
		t.Fatalf("cycle at day 5: %+v; want a resumed window up to day 5", out)
	}
	checkTiers(t, e, o.snapshot())
}

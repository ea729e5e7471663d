package cold

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/meterstore/meterstore/catalog"
)

func TestWatermarkWalksBackOverForeignCommits(t *testing.T) {
	e := newEnv(t, Options{})
	h := e.ensure(t, loadProfile("power"))
	if w, ok, err := e.tier.Watermark(t.Context(), h); ok || err != nil || !w.IsZero() {
		t.Fatalf("watermark of an empty table: %v %v %v", w, ok, err)
	}
	c := e.archive(t, h, jan2026, feb2026, quarterHours(0, jan2026, 8))
	e.foreignAppend(t, h)
	e.foreignAppend(t, h)
	if _, ok := e.summary(t, h)[SummaryWatermark]; ok {
		t.Fatal("fixture: the foreign commit carries a watermark")
	}
	if w, ok, err := e.tier.Watermark(t.Context(), h); err != nil || !ok || !w.Equal(feb2026) {
		t.Fatalf("watermark under two foreign commits: %v %v %v, want %v", w, ok, err, feb2026)
	}

	restamped, err := e.tier.ReassertWatermark(t.Context(), h)
	if err != nil || !restamped {
		t.Fatalf("reassert: %v %v", restamped, err)
	}
	sum := e.summary(t, h)
	if sum[SummaryWatermark] != FormatTime(feb2026) || sum[SummaryReasserted] != fmt.Sprint(c.SnapshotID) {
		t.Fatalf("re-stamped summary %v", sum)
	}
	if again, err := e.tier.ReassertWatermark(t.Context(), h); err != nil || again {
		t.Fatalf("second reassert: %v %v, want a no-op", again, err)
	}
}

func TestWatermarkMissingAncestor(t *testing.T) {
	e := newEnv(t, Options{})
	h := e.ensure(t, loadProfile("power"))
	e.archive(t, h, jan2026, feb2026, quarterHours(0, jan2026, 8))
	b := e.foreignAppend(t, h).CurrentSnapshot().SnapshotID
	c := e.foreignAppend(t, h).CurrentSnapshot().SnapshotID

	// Expiring the intermediate snapshot strands the watermark: the
	// checked catalog refuses it, as every deployment's does.
	remove := func(cat *catalog.Catalog) error {
		_, _, err := cat.CommitTable(t.Context(), h.Identifier(),
			[]table.Requirement{table.AssertRefSnapshotID(table.MainBranch, &c)},
			[]table.Update{table.NewRemoveSnapshotsUpdate([]int64{b}, false)})
		return err
	}
	if err := remove(e.cat); !errors.Is(err, ErrWatermarkBackwards) {
		t.Fatalf("the checked catalog let an expiry strand the watermark: %v", err)
	}
	if w, ok, err := e.tier.Watermark(t.Context(), h); err != nil || !ok || !w.Equal(feb2026) {
		t.Fatalf("watermark after the refused expiry: %v %v %v", w, ok, err)
	}
	// A foreign tool does it anyway.
	if err := remove(e.foreign); err != nil {
		t.Fatal(err)
	}
	_, _, err := e.tier.Watermark(t.Context(), h)
	var missing *MissingAncestorError
	if !errors.As(err, &missing) || missing.SnapshotID != c || missing.ParentID != b {
		t.Fatalf("watermark over a hole: %v, want a missing ancestor %d of %d", err, b, c)
	}
	if !strings.Contains(err.Error(), fmt.Sprint(b)) {
		t.Fatalf("the error does not name the missing snapshot: %v", err)
	}
	if _, err := e.tier.Archive(t.Context(), h, mar2026, feb2026, mar2026, nil); !errors.As(err, &missing) {
		t.Fatalf("archive over a hole: %v", err)
	}
	if _, err := e.tier.ReassertWatermark(t.Context(), h); !errors.As(err, &missing) {
		t.Fatalf("reassert over a hole: %v", err)
	}
}

func TestWatermarkMalformed(t *testing.T) {
	e := newEnv(t, Options{})
	h := e.ensure(t, loadProfile("power"))
	ice, err := e.foreign.LoadTable(t.Context(), h.Identifier())
	if err != nil {
		t.Fatal(err)
	}
	tx := ice.NewTransaction()
	if err := tx.AddFiles(t.Context(), nil, iceberg.Properties{SummaryWatermark: "yesterday"}, true); err != nil {
		t.Fatal(err)
	}
	next, err := tx.Commit(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = Watermark(next.Metadata())
	if err == nil || !strings.Contains(err.Error(), fmt.Sprint(next.CurrentSnapshot().SnapshotID)) {
		t.Fatalf("malformed watermark: %v, want an error naming the snapshot", err)
	}
}

// stamp commits an empty append carrying watermark w on tbl, through
// whatever catalog tbl was loaded from.
func stamp(t *testing.T, tbl *table.Table, w time.Time) error {
	t.Helper()
	tx := tbl.NewTransaction()
	if err := tx.AddFiles(t.Context(), nil, iceberg.Properties{SummaryWatermark: FormatTime(w)}, true); err != nil {
		t.Fatal(err)
	}
	_, err := tx.Commit(t.Context())
	return err
}

func TestWatermarkCheckRefusesBackwards(t *testing.T) {
	e := newEnv(t, Options{})
	h := e.ensure(t, loadProfile("power"))
	load := func() *table.Table {
		ice, err := e.cat.LoadTable(t.Context(), h.Identifier())
		if err != nil {
			t.Fatal(err)
		}
		return ice
	}
	if err := stamp(t, load(), feb2026); err != nil {
		t.Fatal(err)
	}
	if err := stamp(t, load(), jan2026); !errors.Is(err, ErrWatermarkBackwards) {
		t.Fatalf("a commit moving W back: %v", err)
	}
	if err := stamp(t, load(), feb2026); err != nil {
		t.Fatalf("a commit keeping W: %v", err)
	}
	if _, err := e.tier.Archive(t.Context(), h, jan2026, jan2026.Add(-time.Hour), jan2026, nil); !errors.Is(err, ErrWatermarkBackwards) {
		t.Fatalf("Archive moving W back: %v", err)
	}
	if w, _, _ := e.tier.Watermark(t.Context(), h); !w.Equal(feb2026) {
		t.Fatalf("watermark %v", w)
	}
}

// TestWatermarkCheckOnRetry races two committers from the same snapshot
// with iceberg-go's commit retries on. The one with the earlier watermark
// loses the compare-and-set, refreshes, replays onto the winner, and must
// still be refused. Without the check the replay lands and W moves back,
// which shows the test can fail.
func TestWatermarkCheckOnRetry(t *testing.T) {
	for _, checked := range []bool{true, false} {
		t.Run(fmt.Sprintf("checked=%v", checked), func(t *testing.T) {
			e := newEnv(t, Options{})
			cat := e.foreign
			if checked {
				cat = e.cat
			}
			h := e.ensure(t, loadProfile("power"))
			ice, err := cat.LoadTable(t.Context(), h.Identifier())
			if err != nil {
				t.Fatal(err)
			}
			tx := ice.NewTransaction()
			if err := tx.SetProperties(iceberg.Properties{table.CommitNumRetriesKey: "3", table.CommitMinRetryWaitMsKey: "1", table.CommitMaxRetryWaitMsKey: "5"}); err != nil {
				t.Fatal(err)
			}
			if ice, err = tx.Commit(t.Context()); err != nil {
				t.Fatal(err)
			}
			if err := stamp(t, ice, mar2026); err != nil {
				t.Fatal(err)
			}
			err = stamp(t, ice, feb2026) // built on the same snapshot
			w, _, werr := e.tier.Watermark(t.Context(), h)
			if werr != nil {
				t.Fatal(werr)
			}
			if checked {
				if !errors.Is(err, ErrWatermarkBackwards) || !w.Equal(mar2026) {
					t.Fatalf("replayed commit: %v; watermark %v, want %v", err, w, mar2026)
				}
				return
			}
			if err != nil || !w.Equal(feb2026) {
				t.Fatalf("without the check the replay should land and move W back: %v, watermark %v", err, w)
			}
		})
	}
}

func TestWatermarkCheckLeavesOtherTablesAlone(t *testing.T) {
	e := newEnv(t, Options{})
	h := e.ensure(t, loadProfile("power"))
	ident := table.Identifier{"meterstore", "foreign"}
	ice, err := e.cat.CreateTable(t.Context(), ident, Schema(loadProfile("foreign")))
	if err != nil {
		t.Fatal(err)
	}
	if err := stamp(t, ice, feb2026); err != nil {
		t.Fatal(err)
	}
	if ice, err = e.cat.LoadTable(t.Context(), ident); err != nil {
		t.Fatal(err)
	}
	if err := stamp(t, ice, jan2026); err != nil {
		t.Fatalf("a table that is not the Tier's was checked: %v", err)
	}

	// Removing the mark of the Tier's table would end the checks.
	mine, err := e.cat.LoadTable(t.Context(), h.Identifier())
	if err != nil {
		t.Fatal(err)
	}
	tx := mine.NewTransaction()
	if err := tx.RemoveProperties([]string{PropTimeModel}); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(t.Context()); !errors.Is(err, ErrWatermarkBackwards) {
		t.Fatalf("removing %s: %v", PropTimeModel, err)
	}
}

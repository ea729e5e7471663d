package cold

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/meterstore/meterstore/internal/rollup"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// A RollupCheck is what VerifyRollup found of a table's daily rollup.
type RollupCheck struct {
	// Present is false for a table without a rollup (nothing archived
	// since rollups began, or a point table).
	Present bool
	// Behind: the rollup reflects another snapshot than the table's
	// current one, or lacks a column of the rollup's schema (an earlier
	// release wrote it; the next catch-up rewrites it), so it was not
	// compared (reads compute the days).
	Behind bool
	// Days are the balancing days compared, Rows the rollup rows.
	Days, Rows int
	// Problems are the days whose rollup differs from their readings.
	Problems []string
}

// RollupSampleDays is how many days VerifyRollup compares without deep:
// the last settled day and days drawn from the year before it.
const RollupSampleDays = 8

// VerifyRollup compares t's daily rollup with the rollup of its readings
// (every version resolved, as CatchUpRollup computes it): for every
// settled day with deep, else for RollupSampleDays days. It compares only
// a rollup that reflects t's current snapshot.
func (c *Tier) VerifyRollup(ctx context.Context, t *Table, deep bool) (RollupCheck, error) {
	var out RollupCheck
	if t.decl.TimeModel != series.Interval {
		return out, nil
	}
	r := c.RollupHandle(t)
	ice, err := c.load(ctx, t)
	if err != nil {
		return out, err
	}
	st, err := c.RollupState(ctx, r)
	if errors.Is(err, icecatalog.ErrNoSuchTable) || errors.Is(err, icecatalog.ErrNoSuchNamespace) {
		return out, nil
	}
	if err != nil || !st.Ok {
		return out, err
	}
	out.Present = true
	if snap := ice.CurrentSnapshot(); snap == nil || snap.SnapshotID != st.Source {
		out.Behind = true
		return out, nil
	}
	rice, err := c.load(ctx, r)
	if err != nil {
		return out, err
	}
	if !rollupAnswers(&t.decl, rice, rice.CurrentSnapshot()) {
		out.Behind = true
		return out, nil
	}
	last := c.cal.BalancingDay(st.Watermark.Add(-time.Microsecond), metering.Electricity).AddDays(-1)
	var days []series.Range
	if deep {
		days = []series.Range{{To: st.Watermark}}
	} else {
		picked := []metering.Date{last}
		for range RollupSampleDays - 1 {
			picked = append(picked, last.AddDays(-1-rand.IntN(365)))
		}
		for _, d := range picked {
			days = append(days, series.Range{From: c.cal.DayStart(d), To: c.cal.DayEnd(d)})
		}
	}
	for _, q := range days {
		want, err := c.rollupOf(ctx, t, ice, q, st.Watermark, 0)
		if err != nil {
			return out, err
		}
		// The days rollupOf computes: those overlapping q that begin
		// on or after midnight of the Berlin day before q's.
		stored := series.Range{To: q.To}
		if !q.From.IsZero() {
			stored.From = c.cal.DayStart(c.cal.BalancingDay(q.From, metering.Electricity).AddDays(-1))
		}
		got, _, err := c.rollupRows(ctx, r, stored)
		if err != nil {
			return out, err
		}
		got = rollup.Current(got)
		spans := newDaySpans(c.cal)
		got = slices.DeleteFunc(got, func(x rollup.Row) bool {
			start, end := spans.of(x.Day, x.Commodity)
			return end.After(st.Watermark) || !q.From.IsZero() && !end.After(q.From) || !start.Before(q.To)
		})
		out.Rows += len(got)
		out.Days++
		if p := compareRollup(got, want); p != "" {
			days := "every settled day"
			if !q.From.IsZero() {
				days = "the day of " + FormatTime(q.From)
			}
			out.Problems = append(out.Problems, fmt.Sprintf("the daily rollup of %s differs from its readings, %s: %s", t.decl.Name, days, p))
		}
	}
	return out, nil
}

// compareRollup says how the stored rows got differ from the computed
// ones want, or "" if they do not; rollup versions aside.
func compareRollup(got, want []rollup.Row) string {
	line := func(x rollup.Row) string {
		x.Version, x.MaxRecord = 0, x.MaxRecord.UTC()
		return fmt.Sprintf("%+v", x)
	}
	for i := range max(len(got), len(want)) {
		switch {
		case i >= len(got):
			return "missing " + line(want[i])
		case i >= len(want):
			return "stored, and no readings give it: " + line(got[i])
		case line(got[i]) != line(want[i]):
			return "stored " + line(got[i]) + ", the readings give " + line(want[i])
		}
	}
	return ""
}

// expireRollup removes the snapshots of t's daily rollup that reflect
// snapshots of t that are gone (expired): no read can ask for them any
// more. The current snapshot and those a reference names stay. It
// returns how many it removed.
func (c *Tier) expireRollup(ctx context.Context, t *Table, meta table.Metadata) (int, error) {
	r := c.RollupHandle(t)
	ice, err := c.load(ctx, r)
	if errors.Is(err, icecatalog.ErrNoSuchTable) || errors.Is(err, icecatalog.ErrNoSuchNamespace) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	rm := ice.Metadata()
	cur := rm.CurrentSnapshot()
	if cur == nil {
		return 0, nil
	}
	keep := map[int64]bool{cur.SnapshotID: true}
	for _, ref := range rm.Refs() {
		keep[ref.SnapshotID] = true
	}
	var expire []int64
	for _, s := range rm.Snapshots() {
		if keep[s.SnapshotID] || s.Summary == nil {
			continue
		}
		src, err := strconv.ParseInt(s.Summary.Properties[rollup.SummarySourceSnapshot], 10, 64)
		if err == nil && meta.SnapshotByID(src) == nil {
			expire = append(expire, s.SnapshotID)
		}
	}
	if len(expire) == 0 {
		return 0, nil
	}
	reqs := []table.Requirement{table.AssertTableUUID(rm.TableUUID()), table.AssertRefSnapshotID(table.MainBranch, &cur.SnapshotID)}
	if _, _, err := c.cat.CommitTable(ctx, r.ident, reqs, []table.Update{table.NewRemoveSnapshotsUpdate(expire, false)}); err != nil {
		return 0, fmt.Errorf("cold: expire %d snapshots of %s: %w", len(expire), r.decl.Name, err)
	}
	return len(expire), nil
}

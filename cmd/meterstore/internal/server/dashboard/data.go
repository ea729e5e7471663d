package dashboard

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"strings"
	"time"

	"github.com/meterstore/meterstore/cmd/meterstore/internal/server/auth"
	"github.com/meterstore/meterstore/config"
	"github.com/meterstore/meterstore/store"
)

// view is what the page shows.
type view struct {
	Now    string
	Days   int
	From   string // the first day shown
	Logout string
	Tables []tableView
}

// tableView is one table's part of the page.
type tableView struct {
	Name string
	// State is quarantined, unhealthy or healthy; Reason says why a table
	// is not healthy.
	State, Reason                       string
	Archived                            bool
	Watermark, Lag                      string
	HotPartitions, PartitionsAhead      int64
	InvariantViolations, MirrorForks    int64
	LagChart, RowsChart, DurationChart  template.HTML
	CompletenessChart                   template.HTML
	Windows                             []windowRow
	HistoryError, CompletenessError     string
	Expected, Present, Missing, Surplus int64
	// NotDue counts the series-days shown whose deliveries are not due
	// yet (query.delivery_lag), whose missing intervals are not counted.
	NotDue int64
}

// windowRow is one archival commit of the table below the charts.
type windowRow struct {
	CommittedAt, Kind, Window, Watermark, Duration string
	Rows, LateRows                                 string
}

// maxWindowRows bounds the commits listed below the charts; the charts
// show every commit of the span.
const maxWindowRows = 12

// collect gathers the page: the status at now of every table tok may
// touch, and for each its commits and completeness of the last Days days.
func (d *Dashboard) collect(ctx context.Context, tok config.Token) view {
	now := d.o.Clock().UTC()
	today := now.Truncate(24 * time.Hour)
	from := today.AddDate(0, 0, -(d.o.Days - 1))
	v := view{Now: now.Format(time.RFC3339), Days: d.o.Days, From: from.Format(time.DateOnly), Logout: LogoutPath}
	for _, st := range d.s.Status(ctx, now) {
		if !auth.MayTouch(tok, st.Table) {
			continue
		}
		tv := tableView{Name: st.Table, State: "healthy", HotPartitions: st.HotPartitions,
			PartitionsAhead: st.PartitionsAhead, InvariantViolations: st.InvariantViolations, MirrorForks: st.MirrorForks}
		var q *store.QuarantineError
		switch {
		case errors.As(st.Err, &q):
			tv.State = "quarantined"
		case !st.Healthy:
			tv.State = "unhealthy"
		}
		if st.Err != nil {
			tv.Reason = st.Err.Error()
		} else if !st.Healthy {
			tv.Reason = unhealthyReason(st)
		}
		if st.HasWatermark {
			tv.Archived = true
			tv.Watermark = st.Watermark.UTC().Format(time.RFC3339)
			tv.Lag = days(st.WatermarkLag)
		}
		d.history(ctx, &tv, from)
		d.completeness(ctx, &tv, from, today, now)
		v.Tables = append(v.Tables, tv)
	}
	return v
}

// unhealthyReason names what makes a table without an error unhealthy.
func unhealthyReason(st store.TableStatus) string {
	var r []string
	if st.PartitionsAhead == 0 {
		r = append(r, "no hot partition is ahead of now: ingest of new readings will fail")
	}
	if st.InvariantViolations > 0 {
		r = append(r, fmt.Sprintf("%d rows in PostgreSQL lie below the watermark", st.InvariantViolations))
	}
	if st.MirrorForks > 0 {
		r = append(r, fmt.Sprintf("%d foreign commits in the metadata mirror", st.MirrorForks))
	}
	return strings.Join(r, "; ")
}

// history charts the table's archival commits since from: the
// watermark's lag at each commit, the rows and the duration per window.
func (d *Dashboard) history(ctx context.Context, tv *tableView, from time.Time) {
	commits, err := d.s.ArchivalHistory(ctx, tv.Name, from)
	if err != nil {
		tv.HistoryError = err.Error()
		return
	}
	var lag, rows, dur []point
	for _, c := range commits {
		if !c.Watermark.IsZero() {
			lag = append(lag, point{c.CommittedAt, c.CommittedAt.Sub(c.Watermark).Hours() / 24})
		}
		if c.To.IsZero() {
			continue // no window: a late correction or a re-stamp
		}
		rows = append(rows, point{c.To, float64(max(c.Rows, 0))})
		if c.Duration >= 0 {
			dur = append(dur, point{c.To, c.Duration.Seconds()})
		}
	}
	tv.LagChart = lineChart("watermark lag at each commit", "days", lag)
	tv.RowsChart = barChart("rows archived per window (by window end)", "rows", rows, colorRows)
	tv.DurationChart = barChart("write duration per window", "seconds", dur, colorDuration)
	for i := len(commits) - 1; i >= 0 && len(tv.Windows) < maxWindowRows; i-- {
		c := commits[i]
		row := windowRow{CommittedAt: c.CommittedAt.Format(time.RFC3339), Kind: c.Kind, Window: "–",
			Rows: count(c.Rows), LateRows: count(c.LateRows), Duration: "–"}
		if !c.Watermark.IsZero() {
			row.Watermark = c.Watermark.Format(time.RFC3339)
		}
		switch c.Kind {
		case store.CommitArchival:
			row.Window = c.From.Format(time.RFC3339) + " – " + c.To.Format(time.RFC3339)
			row.Duration = "not recorded"
		case store.CommitLate:
			row.Duration = "not recorded"
		case store.CommitCompaction:
			row.Kind = fmt.Sprintf("compaction: %d files rewritten", c.Compacted)
		}
		if c.Duration >= 0 {
			row.Duration = c.Duration.String()
		}
		tv.Windows = append(tv.Windows, row)
	}
}

// completeness charts the intervals expected and present per balancing
// day from the completeness relation, the Berlin calendar's own count; a
// day whose deliveries are not due at now counts no missing intervals.
func (d *Dashboard) completeness(ctx context.Context, tv *tableView, from, to, now time.Time) {
	sql := fmt.Sprintf(`SELECT balancing_day, sum(expected), sum(present), sum(missing), sum(surplus), count(*) FILTER (WHERE NOT due)
FROM completeness WHERE balancing_day BETWEEN DATE '%s' AND DATE '%s' GROUP BY 1 ORDER BY 1`,
		from.Format(time.DateOnly), to.Format(time.DateOnly))
	res, err := d.s.QueryAt(ctx, tv.Name, sql, store.ReadOptions{Now: now})
	if err != nil {
		tv.CompletenessError = err.Error()
		return
	}
	var expected, present []point
	for _, row := range res.Rows {
		day, ok := row[0].(time.Time)
		if !ok || len(row) < 6 {
			tv.CompletenessError = fmt.Sprintf("unexpected row %v", row)
			return
		}
		e, p, m, s := toInt(row[1]), toInt(row[2]), toInt(row[3]), toInt(row[4])
		tv.Expected, tv.Present, tv.Missing, tv.Surplus = tv.Expected+e, tv.Present+p, tv.Missing+m, tv.Surplus+s
		tv.NotDue += toInt(row[5])
		expected = append(expected, point{day, float64(e)})
		present = append(present, point{day, float64(p)})
	}
	tv.CompletenessChart = pairChart("intervals per balancing day: expected (outline) and present (filled)", expected, present)
}

// toInt converts a sum DuckDB answers (an integer or a HUGEINT as
// *big.Int, or a float) to an int64.
func toInt(v any) int64 {
	switch n := v.(type) {
	case int64:
		return n
	case int32:
		return int64(n)
	case float64:
		return int64(n)
	case interface{ Int64() int64 }:
		return n.Int64()
	case nil:
		return 0
	}
	var i int64
	fmt.Sscan(fmt.Sprint(v), &i)
	return i
}

// days formats a duration in days, to a tenth.
func days(d time.Duration) string { return fmt.Sprintf("%.1f days", d.Hours()/24) }

// count formats a count of a summary, "–" when it has none.
func count(n int64) string {
	if n < 0 {
		return "–"
	}
	return fmt.Sprint(n)
}

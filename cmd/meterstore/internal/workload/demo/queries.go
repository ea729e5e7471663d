package demo

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/meterstore/meterstore/config"
	"github.com/meterstore/meterstore/metering"
)

// A demoQuery is one of the cross-tier queries the demo ends with.
type demoQuery struct {
	table, title, sql string
}

// demoQueries returns the queries the demo ends with.
func (r *runner) demoQueries() []demoQuery {
	return []demoQuery{
		// The month is named after grouping, not per reading: strftime
		// on each of the cold tier's 7.5 million readings doubled that
		// tier's share of the line (0.8 s against 0.37 s, measured).
		{"power", "Monthly total per meter (the first six rows), resolved versions from both tiers", `
SELECT malo_id, strftime(month, '%Y-%m') AS month, kwh, quarter_hours
FROM (SELECT malo_id, date_trunc('month', balancing_day) AS month,
             sum(value) AS kwh, count(*) AS quarter_hours
      FROM readings GROUP BY ALL)
ORDER BY malo_id, month LIMIT 6`},
		r.gasQuery(),
		{"power", "system.tables", `
SELECT "table", watermark, watermark_lag_seconds, hot_partitions, partitions_ahead,
       invariant_violations, healthy
FROM system.tables`},
	}
}

// gasQuery shows five gas days around the latest clock change among the
// days delivered, with its 23 or 25 hours; without one, the last five
// days, and says so.
func (r *runner) gasQuery() demoQuery {
	var change metering.Date
	found := false
	for d := r.last; d.Compare(r.first) >= 0; d = d.AddDays(-1) {
		if r.cal.GasDayEnd(d).Sub(r.cal.GasDayStart(d)) != 24*time.Hour {
			change, found = d, true
			break
		}
	}
	from, to := r.last.AddDays(-4), r.last
	title := fmt.Sprintf("Gas balancing days %s to %s: no clock change among the days delivered (%s to %s), so every gas day has 24 hours",
		from, to, r.first, r.last)
	if found {
		from, to = change.AddDays(-2), change.AddDays(2)
		hours := int(r.cal.GasDayEnd(change).Sub(r.cal.GasDayStart(change)).Hours())
		title = fmt.Sprintf("Gas balancing days around the clock change: the gas day named after %s %d %s has %d hours",
			change.Weekday(), change.Day, change.Month, hours)
	}
	if from.Compare(r.first) < 0 {
		from = r.first
	}
	if to.Compare(r.last) > 0 {
		to = r.last
	}
	ts := func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05+00") }
	return demoQuery{"gas", title, fmt.Sprintf(`
SELECT balancing_day, meter_expected_intervals(balancing_day, 'PT1H', 'GAS') AS hours,
       count(*) AS meters, sum(value) AS kwh
FROM readings
WHERE "from" >= TIMESTAMPTZ '%s' AND "from" < TIMESTAMPTZ '%s'
GROUP BY ALL ORDER BY balancing_day`, ts(r.cal.GasDayStart(from)), ts(r.cal.GasDayEnd(to)))}
}

// queries runs the demo's queries at the demo's now and prints their
// answers with the watermark and the tiers each read.
func (r *runner) queries(ctx context.Context) error {
	if err := r.s.RefreshSystemTables(ctx, r.cfg.Now); err != nil {
		return fmt.Errorf("demo: system tables: %w", err)
	}
	out := r.cfg.Out
	for _, q := range r.demoQueries() {
		start := time.Now()
		res, err := r.s.Query(ctx, q.table, q.sql)
		if err != nil {
			return fmt.Errorf("demo: query %s: %w", q.title, err)
		}
		w, tiers := "-", "none"
		if res.HasWatermark {
			w = res.Watermark.UTC().Format(time.RFC3339)
		}
		if len(res.Tiers) > 0 {
			tiers = strings.Join(res.Tiers, "+")
		}
		hot := ""
		if t := res.Timing; t.HotRows > 0 && t.HotScan > 0 {
			hot = fmt.Sprintf("; %d hot rows at %.0f/s", t.HotRows, float64(t.HotRows)/t.HotScan.Seconds())
		}
		fmt.Fprintf(out, "\n%s (%s; W %s; tiers read: %s%s; %s)\n", q.title, q.table, w, tiers, hot, time.Since(start).Round(time.Millisecond))
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  "+strings.Join(res.Columns, "\t"))
		for _, row := range res.Rows {
			cells := make([]string, len(row))
			for i, v := range row {
				cells[i] = cell(v)
			}
			fmt.Fprintln(tw, "  "+strings.Join(cells, "\t"))
		}
		tw.Flush()
	}
	return nil
}

func cell(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case time.Time:
		if x.Hour() == 0 && x.Minute() == 0 && x.Second() == 0 {
			return x.Format(time.DateOnly)
		}
		return x.UTC().Format(time.RFC3339)
	case fmt.Stringer:
		return x.String()
	}
	return fmt.Sprint(v)
}

// writeConfig writes the configuration of the demo's deployment into its
// directory, so that the command line opens it again.
func writeConfig(dir, pgURL, listen, tokenHash string) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, `# The demo's deployment, written by meterstore demo. Use it with any command:
#   meterstore query -c %[1]s --table power "SELECT count(*) FROM readings"

[postgres]
url = %[2]q   # empty: the demo's private server in data_dir/pg
schema = %[3]q
data_dir = %[4]q

[warehouse]
url = %[5]q

[archive]
settlement_lag = "14d"
archival_step = "1d"
reader_grace = "1d"

[query]
cache_dir = %[6]q
# A day's deliveries arrive at 06:00 the morning after.
delivery_lag = "6h"

[server]
listen = %[7]q

# The demo's token, which it printed: queries, status and the dashboard.
[[server.token]]
name = "demo"
hash = %[8]q
scopes = ["query", "admin"]
`, filepath.Join(dir, configName), pgURL, schema, dir, "file://"+filepath.Join(dir, "warehouse"), filepath.Join(dir, "cache"),
		listen, tokenHash)
	for _, t := range tables() {
		res := make([]string, len(t.Resolutions))
		for i, r := range t.Resolutions {
			res[i] = fmt.Sprintf("%q", r.String())
		}
		fmt.Fprintf(&b, `
[[table]]
name = %q
time_model = %q
commodity = %q
resolutions = [%s]
width = %q
headroom = %q
integrity = %q
`, t.Name, t.TimeModel, t.Commodity, strings.Join(res, ", "), t.Width, config.Duration(t.Headroom), t.Integrity)
	}
	path := filepath.Join(dir, configName)
	return path, os.WriteFile(path, []byte(b.String()), 0o644)
}

// configName is the file the demo writes its configuration to.
const configName = "meterstore.toml"

package main

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/store"
)

// maxCompletenessDays bounds the balancing days one completeness report
// covers: ten years of 366 days. The report has a row per series and day
// for every series seen from its first delivery to --to, so its size grows
// with the days asked for, not with the data stored; ten years is the span
// settlement data is commonly kept (§ 257 HGB, § 147 AO), and a longer one
// is a typo or a probe that would run until the statement timeout.
const maxCompletenessDays = 10 * 366

// daysBetween returns the days from lo to hi, in Unix seconds: a
// time.Duration holds only 292 years.
func daysBetween(lo, hi metering.Date) int64 {
	unix := func(d metering.Date) int64 { return time.Date(d.Year, d.Month, d.Day, 0, 0, 0, 0, time.UTC).Unix() }
	return (unix(hi) - unix(lo)) / (24 * 60 * 60)
}

func newCompleteness() *cobra.Command {
	var (
		d                       deployment
		table, from, to, format string
		incomplete              bool
	)
	cmd := &cobra.Command{
		Use:   "completeness --table T --from DAY --to DAY",
		Short: "Per series and balancing day, the intervals the calendar expects against those stored",
		Long: `Reports the relation completeness of --table for the balancing days --from to
--to (both included, YYYY-MM-DD; gas days run 06:00 to 06:00 Berlin time): per
series (malo_id, obis_code and the identity columns) and day, the intervals
the Berlin calendar expects (92, 96 or 100 quarter hours; 23, 24 or 25 hours),
those present in readings (versions resolved, both tiers), the missing and
the surplus ones (off the grid, outside the day or of another resolution).
A series that delivered in the 31 days before --from and nothing since is
missing on every day; one that first delivers within the range is expected
from that day. A day counts missing intervals only once its deliveries are
due, query.delivery_lag after it ends (today never is); column due says
which days are. The same relation is "completeness" in meterstore query.
A report covers at most 3660 days (ten years).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			lo, err := metering.ParseDate(from)
			if err != nil {
				return fmt.Errorf("--from: %w", err)
			}
			hi, err := metering.ParseDate(to)
			if err != nil {
				return fmt.Errorf("--to: %w", err)
			}
			if hi.Compare(lo) < 0 {
				return fmt.Errorf("--to %s is before --from %s", hi, lo)
			}
			if n := daysBetween(lo, hi) + 1; n > maxCompletenessDays {
				return fmt.Errorf("--from %s to --to %s are %d balancing days: completeness reports at most %d (ten years) at once; ask for a shorter range",
					lo, hi, n, maxCompletenessDays)
			}
			if !slices.Contains([]string{"table", "csv", "json"}, format) {
				return fmt.Errorf("--format %q: want table, csv or json", format)
			}
			sql := `SELECT * FROM completeness WHERE balancing_day BETWEEN DATE '` + lo.String() + `' AND DATE '` + hi.String() + `'`
			if incomplete {
				sql += ` AND (missing > 0 OR surplus > 0)`
			}
			sql += ` ORDER BY ALL`
			s, now, err := d.openAt(cmd.Context())
			if err != nil {
				return err
			}
			defer s.Close()
			res, err := s.QueryAt(cmd.Context(), table, sql, store.ReadOptions{Now: now})
			if err != nil {
				return err
			}
			if err := printResult(cmd.OutOrStdout(), format, res); err != nil {
				return err
			}
			missing, surplus := sumColumn(res.Columns, res.Rows, "missing"), sumColumn(res.Columns, res.Rows, "surplus")
			notDue := ""
			if n := countFalse(res.Columns, res.Rows, "due"); n > 0 {
				notDue = fmt.Sprintf(" (%d not yet due at %s, whose missing intervals are not counted)", n, stamp(now))
			}
			fmt.Fprintf(os.Stderr, "%d series-days%s; %d intervals missing, %d surplus; watermark %s; tiers %s\n",
				len(res.Rows), notDue, missing, surplus, stamp(res.Watermark), strings.Join(res.Tiers, ", "))
			return nil
		},
	}
	d.flags(cmd, true)
	f := cmd.Flags()
	f.StringVar(&table, "table", "", "the interval table to report on (required)")
	f.StringVar(&from, "from", "", "the first balancing day, YYYY-MM-DD (required)")
	f.StringVar(&to, "to", "", "the last balancing day, YYYY-MM-DD, included (required)")
	f.StringVar(&format, "format", "table", "table, csv or json (an object per row)")
	f.BoolVar(&incomplete, "incomplete", false, "only the days with missing or surplus intervals")
	cmd.MarkFlagRequired("table")
	cmd.MarkFlagRequired("from")
	cmd.MarkFlagRequired("to")
	return cmd
}

// countFalse returns the rows whose BOOLEAN column name is false.
func countFalse(cols []string, rows [][]any, name string) int {
	i := slices.Index(cols, name)
	if i < 0 {
		return 0
	}
	n := 0
	for _, r := range rows {
		if v, ok := r[i].(bool); ok && !v {
			n++
		}
	}
	return n
}

// sumColumn returns the sum of the BIGINT column name over rows.
func sumColumn(cols []string, rows [][]any, name string) int64 {
	i := slices.Index(cols, name)
	if i < 0 {
		return 0
	}
	var n int64
	for _, r := range rows {
		if v, ok := r[i].(int64); ok {
			n += v
		}
	}
	return n
}

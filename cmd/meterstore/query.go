package main

import (
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/meterstore/meterstore/cmd/meterstore/internal/resultfmt"
	"github.com/meterstore/meterstore/store"
)

func newQuery() *cobra.Command {
	var (
		d             deployment
		table, format string
		refresh       bool
	)
	cmd := &cobra.Command{
		Use:   "query --table T SQL",
		Short: "Run one read-only SQL statement over a table's readings in both tiers",
		Long: `Runs a SELECT over "readings" (per merge key the highest version, then the
latest recorded_at) and "readings_versions" (every version) of --table, across
PostgreSQL and Iceberg, split at the watermark; and over the system tables
system.tables, system.config, system.resolution and system.snapshots, which
--refresh (the default) computes first. The SQL functions meter_local_day,
meter_gas_day, meter_balancing_day and meter_expected_intervals apply the
Berlin calendar.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			s, now, err := d.openAt(cmd.Context())
			if err != nil {
				return err
			}
			defer s.Close()
			if refresh {
				if err := s.RefreshSystemTables(cmd.Context(), now); err != nil {
					fmt.Fprintf(os.Stderr, "meterstore: system tables: %v\n", err)
				}
			}
			res, err := s.Query(cmd.Context(), table, args[0])
			if err != nil {
				return err
			}
			if err := printResult(cmd.OutOrStdout(), format, res); err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "%d rows; watermark %s; tiers %s\n", len(res.Rows), stamp(res.Watermark), strings.Join(res.Tiers, ", "))
			return nil
		},
	}
	d.flags(cmd, true)
	f := cmd.Flags()
	f.StringVar(&table, "table", "", "the table whose readings the SQL reads (required)")
	f.StringVar(&format, "format", "table", "table, csv or json (an object per row; a repeated column name gets a suffix _2, _3, ...)")
	f.BoolVar(&refresh, "refresh", true, "compute the system tables before the query")
	cmd.MarkFlagRequired("table")
	return cmd
}

// printResult writes res in format: table, csv or json. The json format
// is one object per row, its keys in column order; a column name given
// again is suffixed _2, _3, ... (the first free one), so that no value is
// lost to a repeated name, as in SELECT 1 AS a, 2 AS a.
func printResult(w io.Writer, format string, res *store.Result) error {
	switch format {
	case "table":
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, strings.Join(res.Columns, "\t"))
		for _, r := range res.Rows {
			fmt.Fprintln(tw, strings.Join(resultfmt.Cells(r, res.Types), "\t"))
		}
		return tw.Flush()
	case "csv":
		cw := csv.NewWriter(w)
		cw.Write(res.Columns)
		for _, r := range res.Rows {
			cw.Write(resultfmt.Cells(r, res.Types))
		}
		cw.Flush()
		return cw.Error()
	case "json":
		j := resultfmt.NewJSONLines(res.Columns, res.Types)
		for _, r := range res.Rows {
			line, err := j.Line(r)
			if err != nil {
				return err
			}
			if _, err := w.Write(line); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("--format %q: want table, csv or json", format)
}

package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

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
	f.StringVar(&format, "format", "table", "table, csv or json")
	f.BoolVar(&refresh, "refresh", true, "compute the system tables before the query")
	cmd.MarkFlagRequired("table")
	return cmd
}

func printResult(w io.Writer, format string, res *store.Result) error {
	switch format {
	case "table":
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, strings.Join(res.Columns, "\t"))
		for _, r := range res.Rows {
			cells := make([]string, len(r))
			for i, v := range r {
				cells[i] = text(v)
			}
			fmt.Fprintln(tw, strings.Join(cells, "\t"))
		}
		return tw.Flush()
	case "csv":
		cw := csv.NewWriter(w)
		cw.Write(res.Columns)
		for _, r := range res.Rows {
			cells := make([]string, len(r))
			for i, v := range r {
				cells[i] = text(v)
			}
			cw.Write(cells)
		}
		cw.Flush()
		return cw.Error()
	case "json":
		enc := json.NewEncoder(w)
		for _, r := range res.Rows {
			obj := make(map[string]any, len(r))
			for i, v := range r {
				obj[res.Columns[i]] = jsonValue(v)
			}
			if err := enc.Encode(obj); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("--format %q: want table, csv or json", format)
}

// text renders a value as SQL would print it: NULL empty, times in UTC.
func text(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case time.Time:
		return x.UTC().Format(time.RFC3339Nano)
	case fmt.Stringer:
		return x.String()
	}
	return fmt.Sprint(v)
}

// jsonValue keeps numbers and booleans as JSON has them and renders the
// rest, decimals among them, as text: a value is never rounded through a
// float.
func jsonValue(v any) any {
	switch v.(type) {
	case nil, bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64, string:
		return v
	}
	return text(v)
}

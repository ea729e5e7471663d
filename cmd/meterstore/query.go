package main

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
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
	cells := func(r []any) []string {
		c := make([]string, len(r))
		for i, v := range r {
			c[i] = text(v, columnType(res, i))
		}
		return c
	}
	switch format {
	case "table":
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, strings.Join(res.Columns, "\t"))
		for _, r := range res.Rows {
			fmt.Fprintln(tw, strings.Join(cells(r), "\t"))
		}
		return tw.Flush()
	case "csv":
		cw := csv.NewWriter(w)
		cw.Write(res.Columns)
		for _, r := range res.Rows {
			cw.Write(cells(r))
		}
		cw.Flush()
		return cw.Error()
	case "json":
		keys := make([][]byte, len(res.Columns))
		for i, name := range uniqueNames(res.Columns) {
			k, err := json.Marshal(name)
			if err != nil {
				return err
			}
			keys[i] = k
		}
		var b bytes.Buffer
		for _, r := range res.Rows {
			b.Reset()
			b.WriteByte('{')
			for i, v := range r {
				if i > 0 {
					b.WriteByte(',')
				}
				val, err := json.Marshal(jsonValue(v, columnType(res, i)))
				if err != nil {
					return fmt.Errorf("column %s: %w", res.Columns[i], err)
				}
				b.Write(keys[i])
				b.WriteByte(':')
				b.Write(val)
			}
			b.WriteString("}\n")
			if _, err := w.Write(b.Bytes()); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("--format %q: want table, csv or json", format)
}

// uniqueNames returns names with each repetition of a name suffixed _2, _3,
// ..., skipping a suffixed name that is a column's own.
func uniqueNames(names []string) []string {
	taken := make(map[string]bool, len(names))
	for _, n := range names {
		taken[n] = true
	}
	seen := make(map[string]bool, len(names))
	out := make([]string, len(names))
	for i, n := range names {
		u := n
		for k := 2; seen[u] || u != n && taken[u]; k++ {
			u = fmt.Sprintf("%s_%d", n, k)
		}
		seen[u] = true
		out[i] = u
	}
	return out
}

// columnType returns the DuckDB type name of column i, or "" if unknown.
func columnType(res *store.Result, i int) string {
	if i < len(res.Types) {
		return res.Types[i]
	}
	return ""
}

// DuckDB's infinite timestamps and dates, as duckdb-go returns them: the
// extreme values of their representations, which no finite one has.
var (
	infinity = []time.Time{
		time.UnixMicro(math.MaxInt64).UTC(),                     // TIMESTAMP, TIMESTAMPTZ
		time.Date(5881580, time.July, 11, 0, 0, 0, 0, time.UTC), // DATE
	}
	minusInfinity = []time.Time{
		time.UnixMicro(-math.MaxInt64).UTC(),
		time.Date(-5877641, time.June, 24, 0, 0, 0, 0, time.UTC),
	}
)

// text renders a value of DuckDB type typ as SQL would print it: NULL
// empty, times in UTC, a date as a date, a UUID in its canonical form.
func text(v any, typ string) string {
	switch x := v.(type) {
	case nil:
		return ""
	case time.Time:
		switch {
		case slices.ContainsFunc(infinity, x.Equal):
			return "infinity"
		case slices.ContainsFunc(minusInfinity, x.Equal):
			return "-infinity"
		case typ == "DATE":
			return x.Format(time.DateOnly)
		case typ == "TIME":
			return x.Format("15:04:05.999999")
		}
		return x.UTC().Format(time.RFC3339Nano)
	case []byte:
		if typ == "UUID" && len(x) == 16 {
			return fmt.Sprintf("%x-%x-%x-%x-%x", x[0:4], x[4:6], x[6:8], x[8:10], x[10:16])
		}
	case fmt.Stringer:
		return x.String()
	}
	return fmt.Sprint(v)
}

// jsonValue keeps numbers and booleans as JSON has them and renders the
// rest, decimals among them, as text: a value is never rounded through a
// float.
func jsonValue(v any, typ string) any {
	switch v.(type) {
	case nil, bool, int8, int16, int32, int64, uint8, uint16, uint32, uint64, string:
		return v
	}
	return text(v, typ)
}

package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/meterstore/meterstore/store"
)

func newQuery() *cobra.Command {
	var (
		d             deployment
		table, format string
		refresh       bool
		snapshot      int64
		asOf, knownAt string
		paramArgs     []string
		historical    bool
		operational   bool
	)
	cmd := &cobra.Command{
		Use:   "query [--table T] (SQL | - | @FILE)",
		Short: "Run one read-only SQL statement over the deployment's tables in both tiers",
		Long: `Runs a SELECT over the deployment: every declared table is a schema holding
"readings" (per merge key the highest version, then the latest recorded_at),
"readings_versions" (every version) and "completeness", across PostgreSQL
and Iceberg, each table split at its own watermark, as in
SELECT ... FROM power.readings p JOIN gas.readings g USING (malo_id);
and over the system tables system.tables, system.config, system.resolution
and system.snapshots, which --refresh (the default) computes first. --table
makes a table the default, read by an unqualified readings. The SQL
functions meter_local_day, meter_gas_day, meter_balancing_day and
meter_expected_intervals apply the Berlin calendar.

--as-of-snapshot ID reads as of that cold snapshot: its files below its
watermark, and above it the rows recorded when it was committed, wherever they
are now; --as-of TIME does so for the snapshot current at TIME (see
"meterstore snapshots"). --known-at TIME hides every row recorded after TIME,
in both tiers. A snapshot is one table's: --as-of-snapshot reads a
statement of one table alone (--table, or the one it names). The
line after the result names the snapshot, watermark and ceiling read, and
each other table's watermark and tiers.

The statement is the argument, or standard input for "-", or the file FILE
for "@FILE", at most 1 MiB (store.MaxStatementBytes).

--format csv and json write the rows as they come, holding none: a result
of any size takes the memory of a page. --format table (the default) holds
the result to align its columns, within query.max_rows and
query.max_result_bytes.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts, err := readOptions(snapshot, asOf, knownAt)
			if err != nil {
				return err
			}
			sql, err := statementArg(cmd, args[0])
			if err != nil {
				return err
			}
			s, now, err := d.openAt(cmd.Context())
			if err != nil {
				return err
			}
			defer s.Close()
			// A historical read makes no PostgreSQL connection at all; the
			// system tables' status would.
			if refresh && !historical {
				if err := s.RefreshSystemTables(cmd.Context(), now); err != nil {
					fmt.Fprintf(os.Stderr, "meterstore: system tables: %s\n", shownError(err))
				}
			}
			opts.Now = now // the relation completeness judges due days at --now
			switch {
			case historical:
				opts.Mode = store.ReadHistorical
			case operational:
				opts.Mode = store.ReadOperational
			}
			params := make([]any, len(paramArgs))
			for i, p := range paramArgs {
				params[i] = p
			}
			p, err := newPrinter(cmd.OutOrStdout(), format)
			if err != nil {
				return err
			}
			st, err := s.Prepare(cmd.Context(), sql, store.StatementOptions{Table: table, Read: opts, Params: params})
			if err != nil {
				return err
			}
			hd, rows, err := printStatement(cmd.Context(), st, p)
			if err != nil {
				return err
			}
			if table == "" {
				fmt.Fprintf(os.Stderr, "%d rows%s%s%s\n", rows, readLine(hd), othersLine("", hd), hotLine(hd))
			} else {
				fmt.Fprintf(os.Stderr, "%d rows; watermark %s; tiers %s%s%s%s\n", rows, stamp(hd.Watermark), strings.Join(hd.Tiers, ", "), readLine(hd), othersLine(table, hd), hotLine(hd))
			}
			return nil
		},
	}
	d.flags(cmd, true)
	f := cmd.Flags()
	f.StringVar(&table, "table", "", "the default table, which an unqualified readings reads")
	f.BoolVar(&historical, "historical", false, "read the cold tier alone, with no PostgreSQL connection: the rows below the watermark")
	f.BoolVar(&operational, "operational", false, "read the hot tier alone, with no Iceberg round trip: the rows of the attached partitions")
	f.StringArrayVar(&paramArgs, "param", nil, "the value of the statement's next placeholder ($1, $2, ... or ?), bound, never made SQL text; repeat for each")
	f.StringVar(&format, "format", "table", "table, csv or json (an object per row; a repeated column name gets a suffix _2, _3, ...)")
	f.BoolVar(&refresh, "refresh", true, "compute the system tables before the query")
	f.Int64Var(&snapshot, "as-of-snapshot", 0, "read as of this cold snapshot id")
	f.StringVar(&asOf, "as-of", "", "read as of the cold snapshot current at this time (RFC 3339)")
	f.StringVar(&knownAt, "known-at", "", "hide the rows recorded after this time (RFC 3339), in both tiers")
	cmd.MarkFlagsMutuallyExclusive("as-of-snapshot", "as-of")
	cmd.MarkFlagsMutuallyExclusive("historical", "operational")
	return cmd
}

// readOptions returns the read options of the flags.
func readOptions(snapshot int64, asOf, knownAt string) (store.ReadOptions, error) {
	o := store.ReadOptions{AsOfSnapshot: snapshot}
	if snapshot < 0 {
		return o, fmt.Errorf("--as-of-snapshot %d: want a snapshot id", snapshot)
	}
	for _, f := range []struct {
		name, v string
		dst     *time.Time
	}{{"--as-of", asOf, &o.AsOf}, {"--known-at", knownAt, &o.KnownAt}} {
		if f.v == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, f.v)
		if err != nil {
			return o, fmt.Errorf("%s %q: want RFC 3339, such as 2026-03-01T06:00:00+01:00", f.name, f.v)
		}
		*f.dst = t
	}
	return o, nil
}

// othersLine describes the tables other than table (the default, if any)
// that a result read, each split at its own watermark, for the line after
// it; empty when it read no other.
func othersLine(table string, h *store.ResultHeader) string {
	var b strings.Builder
	for _, t := range h.Tables {
		if t.Name == table {
			continue
		}
		w := "-"
		if t.HasWatermark {
			w = stamp(t.Watermark)
		}
		fmt.Fprintf(&b, "; %s: watermark %s, tiers %s", t.Name, w, strings.Join(t.Tiers, ", "))
		if t.Snapshot != 0 {
			fmt.Fprintf(&b, ", snapshot %d", t.Snapshot)
		}
	}
	return b.String()
}

// hotLine says how many rows the hot tier sent and at what rate, for the
// line after a result; empty when it sent none.
func hotLine(h *store.ResultHeader) string {
	t := h.Timing
	if t.HotRows == 0 || t.HotScan <= 0 {
		return ""
	}
	return fmt.Sprintf("; %d hot rows in %s (%.0f rows/s)", t.HotRows, t.HotScan.Round(time.Millisecond), float64(t.HotRows)/t.HotScan.Seconds())
}

// readLine describes the snapshot and ceiling a result read, for the line
// after it; empty for a plain read of the current state.
func readLine(h *store.ResultHeader) string {
	var b strings.Builder
	if h.Snapshot != 0 {
		fmt.Fprintf(&b, "; snapshot %d", h.Snapshot)
		if h.AsOf {
			fmt.Fprintf(&b, " (as of, committed %s)", h.SnapshotAt.UTC().Format(time.RFC3339Nano))
		}
	}
	if !h.Ceiling.IsZero() {
		fmt.Fprintf(&b, "; recorded_at <= %s", h.Ceiling.UTC().Format(time.RFC3339Nano))
	}
	if !h.KnownAt.IsZero() && !h.KnownAt.Equal(h.Ceiling) {
		fmt.Fprintf(&b, "; known at %s", h.KnownAt.UTC().Format(time.RFC3339Nano))
	}
	if h.Mode != store.ReadAuto {
		fmt.Fprintf(&b, "; %s read", h.Mode)
		for _, t := range h.Tables {
			if !t.HasUnseen {
				continue
			}
			switch {
			case t.Unseen.From.IsZero() && t.Unseen.To.IsZero():
				fmt.Fprintf(&b, ", %s: no row seen", t.Name)
			case t.Unseen.To.IsZero():
				fmt.Fprintf(&b, ", %s: rows from %s not seen", t.Name, stamp(t.Unseen.From))
			default:
				fmt.Fprintf(&b, ", %s: rows before %s not seen", t.Name, stamp(t.Unseen.To))
			}
		}
	}
	return b.String()
}

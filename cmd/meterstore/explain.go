package main

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/meterstore/meterstore/store"
)

func newExplain() *cobra.Command {
	var (
		d     deployment
		table string
		files bool
	)
	cmd := &cobra.Command{
		Use:   "explain [--table T] (SQL | - | @FILE)",
		Short: "Say what a query would read of each tier, reading no row and no data file",
		Long: `Analyses a statement as query does (--table, optional, is the default table
of an unqualified readings) and prints, per table it reads, the range of
"from" it can read and its market locations (what the query can bound
from its WHERE), the watermark, and what each tier would give: the
cold snapshot and the data files its plan keeps (from the manifests, whose
statistics prune them; --files lists them) and the hot partitions the range
overlaps. Nothing is executed and no data file is read. DuckDB's own plan
is not shown: it needs the views over the rows, which only a query's read
of the tiers builds.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			sql, err := statementArg(cmd, args[0])
			if err != nil {
				return err
			}
			s, _, err := d.open(cmd.Context())
			if err != nil {
				return err
			}
			defer s.Close()
			xs, err := s.Explain(cmd.Context(), table, sql, nil)
			if err != nil {
				return err
			}
			printExplanation(cmd.OutOrStdout(), xs, files)
			return nil
		},
	}
	d.flags(cmd, false)
	cmd.Flags().StringVar(&table, "table", "", "the default table, which an unqualified readings reads")
	cmd.Flags().BoolVar(&files, "files", false, "list the cold data files")
	return cmd
}

func printExplanation(w io.Writer, xs []store.TableExplanation, files bool) {
	if len(xs) == 0 {
		fmt.Fprintln(w, "reads no table's readings: only the system tables, no tier")
		return
	}
	for _, x := range xs {
		fmt.Fprintf(w, "%s: from %s\n", x.Table, describeRange(x.Range.From, x.Range.To))
		if x.Range.MaLo != nil {
			fmt.Fprintf(w, "  market locations: %s\n", strings.Join(x.Range.MaLo, ", "))
		} else {
			fmt.Fprintln(w, "  market locations: all")
		}
		if x.Range.Empty() {
			fmt.Fprintln(w, "  the range is empty: no tier is read")
			continue
		}
		if x.HasWatermark {
			fmt.Fprintf(w, "  watermark %s\n", stamp(x.Watermark))
		} else {
			fmt.Fprintln(w, "  watermark: none, nothing archived yet")
		}
		if x.Cold {
			fmt.Fprintf(w, "  cold: snapshot %d, %d data files, %d bytes\n", x.Snapshot, len(x.ColdFiles), x.ColdBytes)
			if files {
				for _, f := range x.ColdFiles {
					fmt.Fprintf(w, "    %s\n", shownName(f))
				}
			}
		} else {
			fmt.Fprintln(w, "  cold: not read (the range lies at or above the watermark)")
		}
		if x.Hot {
			fmt.Fprintf(w, "  hot: %d attached partitions", len(x.HotPartitions))
			if len(x.HotPartitions) > 0 {
				fmt.Fprintf(w, ", %s", partitionSpan(x.HotPartitions))
			}
			fmt.Fprintln(w)
		} else {
			fmt.Fprintln(w, "  hot: not read (the range lies below the watermark)")
		}
	}
}

// describeRange writes [from, to), an open bound as infinity.
func describeRange(from, to time.Time) string {
	lo, hi := "-infinity", "infinity"
	if !from.IsZero() {
		lo = stamp(from)
	}
	if !to.IsZero() {
		hi = stamp(to)
	}
	return "[" + lo + ", " + hi + ")"
}

// partitionSpan names the first and last of partitions, by start.
func partitionSpan(parts []string) string {
	if len(parts) == 1 {
		return parts[0]
	}
	return parts[0] + " to " + parts[len(parts)-1]
}

package main

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/meterstore/meterstore/store"
)

func newOrphans() *cobra.Command {
	var (
		d         deployment
		table     string
		del       bool
		olderThan time.Duration
	)
	cmd := &cobra.Command{
		Use:   "orphans",
		Short: "List a table's cold files nothing references (--delete: remove them)",
		Long: `Lists the files under a table's Iceberg location that no snapshot still in
its metadata references, nor the catalog: the metadata of a commit that
lost, the files of a failed archival or of a refused foreign write, the
manifest lists and metadata files snapshot expiry leaves. A file modified
within --older-than is kept whatever it is, for it may belong to a commit
under way: it must exceed the longest commit (0s keeps none for its age).
With --delete the files listed are deleted. Every file kept is listed
after them with the reason: referenced by a snapshot, the catalog's log
or mirror, a foreign commit moved aside, or too young.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, _, err := d.open(cmd.Context())
			if err != nil {
				return err
			}
			defer s.Close()
			age := olderThan
			if age == 0 {
				// The store takes zero for its default age; 0s asks
				// for none.
				age = time.Nanosecond
			}
			rep, err := s.Orphans(cmd.Context(), table, store.OrphanOptions{OlderThan: age, Delete: del})
			if err != nil && len(rep.Orphans) == 0 {
				return err
			}
			w := cmd.OutOrStdout()
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "file\tbytes\tmodified")
			for _, o := range rep.Orphans {
				fmt.Fprintf(tw, "%s\t%d\t%s\n", shownName(o.Location), o.Size, stamp(o.ModTime))
			}
			tw.Flush()
			printKept(w, rep.Kept)
			done := "listed"
			if del {
				done = fmt.Sprintf("%d deleted", rep.Deleted)
			}
			fmt.Fprintf(w, "%s: %d orphan files, %d bytes, %s; %d unreferenced files newer than %s kept; %d files in use\n",
				table, len(rep.Orphans), rep.Bytes(), done, rep.Young, olderThan, rep.Live)
			return err
		},
	}
	d.flags(cmd, false)
	cmd.Flags().StringVar(&table, "table", "", "the table (required)")
	cmd.Flags().BoolVar(&del, "delete", false, "delete the orphan files found")
	cmd.Flags().DurationVar(&olderThan, "older-than", store.DefaultOrphanAge, "the safety age: files modified more recently are kept")
	cmd.MarkFlagRequired("table")
	return cmd
}

// printKept lists the files orphans keeps, each with the reason.
func printKept(w io.Writer, kept []store.KeptFile) {
	if len(kept) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "kept\tbytes\tmodified\twhy")
	for _, k := range kept {
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\n", shownName(k.Location), k.Size, stamp(k.ModTime), k.Why)
	}
	tw.Flush()
}

func newExpire() *cobra.Command {
	var (
		d     deployment
		table string
	)
	cmd := &cobra.Command{
		Use:   "expire",
		Short: "Expire a table's snapshots once, as [maintenance] snapshot_retention and min_snapshots keep them",
		Long: `Re-stamps the watermark onto the current snapshot if a foreign engine
committed it, then removes the snapshots older than
maintenance.snapshot_retention at --now beyond the newest
maintenance.min_snapshots, and those no branch or tag keeps. It removes
metadata, never readings; the files only expired snapshots referenced are
left for meterstore orphans.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, now, err := d.openAt(cmd.Context())
			if err != nil {
				return err
			}
			defer s.Close()
			x, err := s.ExpireSnapshots(cmd.Context(), table, now)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if x.Restamped {
				fmt.Fprintf(w, "%s: watermark re-stamped onto the current snapshot\n", table)
			}
			ids := make([]string, len(x.Expired))
			for i, id := range x.Expired {
				ids[i] = fmt.Sprint(id)
			}
			fmt.Fprintf(w, "%s: %d snapshots expired, %d kept", table, len(x.Expired), x.Kept)
			if len(ids) > 0 {
				fmt.Fprintf(w, " (expired: %s)", strings.Join(ids, ", "))
			}
			fmt.Fprintln(w)
			return nil
		},
	}
	d.flags(cmd, true)
	cmd.Flags().StringVar(&table, "table", "", "the table (required)")
	cmd.MarkFlagRequired("table")
	return cmd
}

func newReassert() *cobra.Command {
	var (
		d     deployment
		table string
	)
	cmd := &cobra.Command{
		Use:   "reassert",
		Short: "Re-stamp a table's watermark onto its current snapshot after a foreign commit",
		Long: `Republishes the watermark on the current snapshot when another engine
committed it (a compaction, say), so reading W no longer depends on the
parent chain that engine's expiry could cut. It cannot move the watermark,
and commits nothing when the current snapshot carries it already.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, _, err := d.open(cmd.Context())
			if err != nil {
				return err
			}
			defer s.Close()
			done, err := s.ReassertWatermark(cmd.Context(), table)
			if err != nil {
				return err
			}
			if done {
				fmt.Fprintf(cmd.OutOrStdout(), "%s: watermark re-stamped onto the current snapshot\n", table)
			} else {
				fmt.Fprintf(cmd.OutOrStdout(), "%s: nothing to do: the current snapshot carries the watermark, or nothing is archived\n", table)
			}
			return nil
		},
	}
	d.flags(cmd, false)
	cmd.Flags().StringVar(&table, "table", "", "the table (required)")
	cmd.MarkFlagRequired("table")
	return cmd
}

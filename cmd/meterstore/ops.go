package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/meterstore/meterstore/catalog"
	"github.com/meterstore/meterstore/cmd/meterstore/internal/server/httpapi"
	"github.com/meterstore/meterstore/cmd/meterstore/internal/server/lifecycle"
	"github.com/meterstore/meterstore/store"
)

func newCreate() *cobra.Command {
	var d deployment
	cmd := &cobra.Command{
		Use:   "create",
		Short: "Declare the configured tables in both tiers and create their partitions ahead",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, now, err := d.openAt(cmd.Context())
			if err != nil {
				return err
			}
			defer s.Close()
			if err := s.EnsurePartitions(cmd.Context(), now); err != nil {
				return err
			}
			printStatus(cmd.OutOrStdout(), s.Status(cmd.Context(), now))
			return nil
		},
	}
	d.flags(cmd, true)
	return cmd
}

func newArchive() *cobra.Command {
	var (
		d     deployment
		table string
	)
	cmd := &cobra.Command{
		Use:   "archive",
		Short: "Run one archival cycle per table (or --table) at --now",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, now, err := d.openAt(cmd.Context())
			if err != nil {
				return err
			}
			defer s.Close()
			names := s.Tables()
			if table != "" {
				names = []string{table}
			}
			w := cmd.OutOrStdout()
			var errs []error
			for _, name := range names {
				out, err := s.Archive(cmd.Context(), name, now)
				var rows int64
				for _, win := range out.Windows {
					rows += win.Rows
				}
				fmt.Fprintf(w, "%s: %s, %d windows, %d readings, W %s\n", name, out.Status, len(out.Windows), rows, stamp(out.Watermark))
				for _, v := range out.Violations {
					fmt.Fprintf(w, "  invariant violation: %s\n", printable(fmt.Sprint(v)))
				}
				if out.RollupErr != "" {
					fmt.Fprintf(w, "  daily rollup behind (daily reads compute its days from readings): %s\n", printable(out.RollupErr))
				}
				if err != nil {
					errs = append(errs, err)
				}
			}
			return errors.Join(errs...)
		},
	}
	d.flags(cmd, true)
	cmd.Flags().StringVar(&table, "table", "", "archive only this table")
	return cmd
}

func newMaintain() *cobra.Command {
	var (
		d             deployment
		once          bool
		metricsListen string
	)
	cmd := &cobra.Command{
		Use:   "maintain",
		Short: "Run the maintenance loop: archival, optional snapshot expiry, health, the retention sweep",
		Long: `Runs one cycle per [maintenance] interval until interrupted, or one cycle with
--once (at --now, if given). Every replica may run it: one wins each table's
archive lease, the others report lease_contended.

With --metrics-listen ADDR it serves, while it runs, GET /metrics: the
Prometheus exposition of the store's metrics (docs/metrics.md), for a
[[server.token]] with scope admin, as meterstore serve does, over TLS when
server.tls_cert is set; and GET /healthz without a token.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var with []store.ConfigOption
			if metricsListen != "" {
				cfg, err := d.load()
				if err != nil {
					return err
				}
				meters, stop, err := lifecycle.ServeTelemetry(cmd.OutOrStdout(), logger(), cfg.Server, metricsListen)
				if err != nil {
					return err
				}
				defer stop()
				with = append(with, store.WithMeters(meters))
			}
			s, cfg, err := d.open(cmd.Context(), with...)
			if err != nil {
				return err
			}
			defer s.Close()
			m := s.MaintenanceFor(cfg)
			w := cmd.OutOrStdout()
			if once {
				now, err := d.clock()
				if err != nil {
					return err
				}
				if err := s.CheckNow(now); err != nil {
					return fmt.Errorf("--now: %w", err)
				}
				out := m.Cycle(cmd.Context(), now)
				printOutcome(w, out)
				return outcomeErr(out)
			}
			h := m.Start(cmd.Context())
			seen := 0
			tick := time.NewTicker(time.Second)
			defer tick.Stop()
			for {
				select {
				case <-h.Done():
					return nil
				case <-tick.C:
				}
				if out, n := h.Last(); n > seen {
					seen = n
					printOutcome(w, out)
				}
			}
		},
	}
	d.flags(cmd, true)
	cmd.Flags().BoolVar(&once, "once", false, "run one cycle and exit")
	cmd.Flags().StringVar(&metricsListen, "metrics-listen", "",
		"serve GET /metrics (Prometheus; a token with scope admin) and GET /healthz at this address while it runs, such as 127.0.0.1:9464")
	return cmd
}

// outcomeErr returns the failures of a cycle as one error, or
// errUnhealthy if it failed nowhere and is still unhealthy.
func outcomeErr(out *store.MaintenanceOutcome) error {
	var errs []error
	for _, f := range out.Failures() {
		errs = append(errs, fmt.Errorf("%s: %w", f.Name, f.Err))
	}
	if len(errs) == 0 && !out.Healthy() {
		return errUnhealthy
	}
	return errors.Join(errs...)
}

func printOutcome(w io.Writer, out *store.MaintenanceOutcome) {
	fmt.Fprintf(w, "cycle at %s\n", stamp(out.At))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "table\tarchive\twindows\twatermark\tpartitions ahead\tviolations\tcompacted\texpired\torphans removed\thealthy\terror")
	for _, t := range out.Tables {
		expired, compacted := "-", "-"
		if t.Expired != nil {
			expired = fmt.Sprint(len(t.Expired.Expired))
		}
		if c := t.Compacted; c != nil {
			compacted = fmt.Sprintf("files %d->%d, manifests %d->%d", c.FilesBefore, c.FilesAfter, c.ManifestsBefore, c.ManifestsAfter)
		}
		orphans := "-"
		if t.Orphans != nil {
			orphans = fmt.Sprint(t.Orphans.Deleted)
		}
		ahead := fmt.Sprint(t.Status.PartitionsAhead)
		if t.PartitionsDeferred {
			ahead += " (creation deferred)"
		}
		msg := ""
		if t.Err != nil {
			msg = printable(t.Err.Error())
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%d\t%s\t%s\t%s\t%v\t%s\n", t.Table, t.Archive.Status, len(t.Archive.Windows),
			stamp(t.Status.Watermark), ahead, t.Status.InvariantViolations, compacted, expired, orphans, t.Healthy(), msg)
	}
	tw.Flush()
	if r := out.Retention; r != nil {
		switch {
		case r.Err != nil:
			fmt.Fprintf(w, "retention sweep failed: %s\n", shownError(r.Err))
		case r.LeaseContended:
			fmt.Fprintln(w, "retention sweep: another replica holds its lease and sweeps")
		default:
			fmt.Fprintf(w, "retention sweep: %d subject links removed\n", r.Removed)
		}
	}
}

func newStatus() *cobra.Command {
	var (
		d      deployment
		format string
	)
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show system.tables and the PostgreSQL server; exit 1 when a table is unhealthy",
		Long: `Prints system.tables at --now and, after it, the PostgreSQL server's
version and, for the private server, the binaries it runs on. --format json
prints the body GET /v1/status answers instead. Exit 1 when a table is
unhealthy.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if format != "table" && format != "json" {
				return fmt.Errorf("--format %q: want table or json", format)
			}
			s, now, err := d.openAt(cmd.Context())
			if err != nil {
				return err
			}
			defer s.Close()
			sts := s.Status(cmd.Context(), now)
			w := cmd.OutOrStdout()
			if format == "json" {
				enc := json.NewEncoder(w)
				enc.SetIndent("", "  ")
				if err := enc.Encode(httpapi.NewStatusBody(now, sts, nil)); err != nil {
					return err
				}
			} else {
				printStatus(w, sts)
				ps, err := s.PostgresServer(cmd.Context())
				if err != nil {
					return err
				}
				fmt.Fprintln(w, describeServer(ps))
			}
			for _, st := range sts {
				if !st.Healthy {
					return errUnhealthy
				}
			}
			return nil
		},
	}
	d.flags(cmd, true)
	cmd.Flags().StringVar(&format, "format", "table", "table, or json (the body of GET /v1/status)")
	return cmd
}

// describeServer says which PostgreSQL server a deployment uses.
func describeServer(ps store.PostgresServer) string {
	switch {
	case !ps.Private:
		return "PostgreSQL " + ps.Version + " at postgres.url"
	case ps.Packaged:
		return "PostgreSQL " + ps.Version + ", private, on packaged binaries in " + ps.Binaries
	}
	return "PostgreSQL " + ps.Version + ", private, on the installed binaries in " + ps.Binaries
}

func printStatus(w io.Writer, sts []store.TableStatus) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "table\twatermark\tlag\thot partitions\tpartitions ahead\tinvariant violations\thealthy\terror")
	for _, st := range sts {
		lag, msg := "-", ""
		if st.HasWatermark {
			lag = st.WatermarkLag.Round(time.Second).String()
		}
		if st.Err != nil {
			msg = printable(st.Err.Error())
		}
		w := stamp(st.Watermark)
		if st.WatermarkFromLedger {
			w += " (ledger)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%v\t%s\n", st.Table, w, lag,
			st.HotPartitions, st.PartitionsAhead, st.InvariantViolations, st.Healthy, msg)
	}
	tw.Flush()
}

func newSnapshots() *cobra.Command {
	var (
		d     deployment
		table string
	)
	cmd := &cobra.Command{
		Use:   "snapshots",
		Short: "List a table's Iceberg snapshots with the watermark in force at each",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, _, err := d.openAt(cmd.Context())
			if err != nil {
				return err
			}
			defer s.Close()
			snaps, err := s.Snapshots(cmd.Context(), table)
			if err != nil {
				return err
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "snapshot_id\tcommitted_at\toperation\twatermark")
			for _, sn := range snaps {
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", sn.ID, stamp(sn.CommittedAt), printable(sn.Operation), stamp(sn.Watermark))
			}
			return tw.Flush()
		},
	}
	d.flags(cmd, false)
	cmd.Flags().StringVar(&table, "table", "", "the table (required)")
	cmd.MarkFlagRequired("table")
	return cmd
}

func newPurge() *cobra.Command {
	var (
		d              deployment
		table, confirm string
	)
	cmd := &cobra.Command{
		Use:   "purge",
		Short: "Destroy a table in both tiers, with every reading: --table X --confirm X",
		Long: `Drops the PostgreSQL table with every partition, the Iceberg table and its
files. It is the only command that deletes stored readings and cannot be
undone, so --confirm must repeat the table's name. An interrupted purge is
completed by running it again.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if confirm != table {
				return fmt.Errorf("purge: --confirm %q does not repeat --table %q", confirm, table)
			}
			s, _, err := d.openAt(cmd.Context())
			if err != nil {
				return err
			}
			defer s.Close()
			n, err := s.Purge(cmd.Context(), table, confirm)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "purged %s: PostgreSQL table and partitions dropped, %d cold files deleted\n", table, n)
			return nil
		},
	}
	d.flags(cmd, false)
	cmd.Flags().StringVar(&table, "table", "", "the table to destroy (required)")
	cmd.Flags().StringVar(&confirm, "confirm", "", "the table's name again (required)")
	cmd.MarkFlagRequired("table")
	cmd.MarkFlagRequired("confirm")
	return cmd
}

// stamp formats t in UTC, or "-" for the zero time.
func stamp(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.UTC().Format(time.RFC3339)
}

func newVerify() *cobra.Command {
	var d deployment
	var resolve, deep, adopt bool
	var orphanAge time.Duration
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Check every cold data file and every partition; exit 1 when something is missing, altered or unaccounted for",
		Long: `Checks, per table, the chain of every snapshot the Iceberg metadata
keeps: its manifest list and each manifest against the SHA-256 its commit
recorded, and the data files they list against the snapshot's digest index
and its summary's file and record counts (a manifest swapped for another
or an entry dropped is found, naming the object). Then that every data
file the current snapshot references exists with the size its manifest records, and the row count
and the bounds of integer, timestamp and decimal columns in its Parquet
footer, and with --deep that its SHA-256 is the digest its commit recorded
(every file is read whole, and those only past snapshots reference too);
that the current metadata file is the one the
log committed; that every partition in
PostgreSQL is accounted for: attached at or above the watermark, or
detached and either covered by the watermark (awaiting its drop) or
recorded by the archival ledger as an archival under way; and that every
file of the table's Hadoop-layout metadata mirror (v<N>.metadata.json,
version-hint.text) is MeterStore's, naming each commit another writer made
there (a fork); and that no file under the table's location that nothing
references (the files of a refused foreign write or a failed archival,
metadata snapshot expiry left) is older than the safety age, the
maintenance loop's maintenance.remove_orphans_after (or --orphan-age, or
a day when removal is off). Each is named with its size and time;
'meterstore orphans --delete' or the maintenance loop removes them.
Unreferenced files younger than the safety age may belong to a commit
under way: they are listed as notes and do not fail the verification.

A data file found altered is recorded in PostgreSQL: every query that
would read it fails naming it, and status reports its table unhealthy,
until a verify finds it intact again (a digest mismatch is cleared only by
verify --deep). Files archived before digests were recorded are counted
as without digest; --adopt-digests records theirs first, once each has the
size and row count its manifest records.

With --resolve-forks each fork is moved to metadata/forked/ (kept, never
deleted; its snapshot and record count are printed) and the mirror is
pointed at the log's head again. Exit 1 when a problem is found, 75 when a
tier could not be reached.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, cfg, err := d.open(cmd.Context())
			if err != nil {
				return err
			}
			defer s.Close()
			if orphanAge == 0 {
				orphanAge = cfg.Maintenance.RemoveOrphansAfter
			}
			if orphanAge == 0 {
				orphanAge = store.DefaultOrphanAge
			}
			w := cmd.OutOrStdout()
			if resolve {
				for _, name := range s.Tables() {
					moved, err := s.ResolveForks(cmd.Context(), name)
					for _, f := range moved {
						fmt.Fprintf(w, "%s: moved %s to %s/ (snapshot %d, %d records)\n",
							name, shownName(f.File), catalog.ForkDir, f.SnapshotID, f.Records)
					}
					if err != nil {
						return err
					}
				}
			}
			if adopt {
				for _, name := range s.Tables() {
					a, err := s.AdoptDigests(cmd.Context(), name)
					if err != nil {
						return err
					}
					if a.Files > 0 {
						fmt.Fprintf(w, "%s: adopted the digests of %d files (%d bytes) in snapshot %d\n", name, a.Files, a.Bytes, a.SnapshotID)
					}
				}
			}
			vs := s.Verify(cmd.Context(), store.VerifyOptions{Deep: deep, OrphanAge: orphanAge})
			tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "table\tsnapshot\twatermark\tsnapshots\tpinned\tdata files\tbytes\twithout digest\thashed\tattached\tdetached\tawaiting drop\tin flight\tproblems\tok")
			for _, v := range vs {
				fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%v\n", v.Table, v.SnapshotID, stamp(v.Watermark),
					v.Snapshots, v.PinnedSnapshots, v.DataFiles, v.DataBytes, v.UndigestedFiles, v.HashedFiles, v.AttachedPartitions, v.DetachedPartitions, v.AwaitingDrop, v.InFlight, len(v.Problems), v.OK())
			}
			tw.Flush()
			var errs []error
			bad := false
			for _, v := range vs {
				for _, p := range v.Problems {
					fmt.Fprintf(w, "%s: %s\n", v.Table, printable(fmt.Sprint(p)))
					bad = true
				}
				for _, o := range v.YoungOrphans {
					fmt.Fprintf(w, "%s: note: a file nothing references yet, younger than the safety age %s (a commit under way, or an orphan once older): %s (%d bytes, modified %s, %s ago)\n",
						v.Table, orphanAge, shownName(o.Location), o.Size, stamp(o.ModTime), time.Since(o.ModTime).Round(time.Second))
				}
				if v.Err != nil {
					errs = append(errs, v.Err)
				}
			}
			if len(errs) > 0 {
				return errors.Join(errs...)
			}
			if bad {
				return errUnhealthy
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&deep, "deep", false, "read every data file whole and compare its SHA-256 with the digest its commit recorded")
	cmd.Flags().BoolVar(&adopt, "adopt-digests", false, "first record the digests of data files archived before digests were recorded")
	cmd.Flags().BoolVar(&resolve, "resolve-forks", false, "move the commits another writer made in the metadata mirror aside, then verify")
	cmd.Flags().DurationVar(&orphanAge, "orphan-age", 0, "the safety age of unreferenced files (default: maintenance.remove_orphans_after, or 24h when that is off)")
	d.flags(cmd, false)
	return cmd
}

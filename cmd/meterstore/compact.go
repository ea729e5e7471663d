package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/meterstore/meterstore/store"
)

func newCompact() *cobra.Command {
	var (
		d        deployment
		table    string
		small    int64
		minFiles int
		resettle int64
		keepOpen bool
	)
	cmd := &cobra.Command{
		Use:   "compact",
		Short: "Rewrite a table's small cold files and merge its manifests (all tables without --table)",
		Long: `Rewrites the data files smaller than --small of each partition of the
cold tier (month and superseded mark) that has at least --min-files of
them as fewer files, and merges the table's manifests, in one commit that
keeps the watermark and every stored row as they are. A month holding late
corrections (whose reads compare versions) is rewritten whole with every
reading's superseded mark decided again, unless it has more than
--resettle-rows readings or --keep-open is given. It runs under the
table's archive lease; a commit that lands meanwhile (a late correction)
refuses it, and it can be run again at once.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, _, err := d.open(cmd.Context())
			if err != nil {
				return err
			}
			defer s.Close()
			tables := []string{table}
			if table == "" {
				tables = s.Tables()
			}
			opts := store.CompactOptions{SmallFileSize: small, MinSmallFiles: minFiles, ResettleRows: resettle, KeepOpen: keepOpen}
			w := cmd.OutOrStdout()
			var errs []error
			for _, name := range tables {
				c, err := s.Compact(cmd.Context(), name, opts)
				if err != nil {
					errs = append(errs, err)
					fmt.Fprintf(w, "%s: %s\n", name, shownError(err))
					continue
				}
				if c.SnapshotID == 0 {
					fmt.Fprintf(w, "%s: nothing to compact: %d data files, %d manifests\n", name, c.FilesBefore, c.ManifestsBefore)
					continue
				}
				fmt.Fprintf(w, "%s: data files %d -> %d, manifests %d -> %d; %d files (%d rows, %d bytes) rewritten as %d in %d partitions, %d of them with late corrections re-marked; snapshot %d\n",
					name, c.FilesBefore, c.FilesAfter, c.ManifestsBefore, c.ManifestsAfter,
					c.Rewritten, c.Rows, c.BytesRead, c.Written, c.Partitions, c.Resettled, c.SnapshotID)
			}
			return errors.Join(errs...)
		},
	}
	d.flags(cmd, false)
	cmd.Flags().StringVar(&table, "table", "", "the table (default: every declared table)")
	cmd.Flags().Int64Var(&small, "small", 0, "the size in bytes below which a data file is small (default 128 MiB)")
	cmd.Flags().IntVar(&minFiles, "min-files", 0, "the small files a partition needs to be rewritten (default and minimum 2)")
	cmd.Flags().Int64Var(&resettle, "resettle-rows", 0, "the most readings of a month with late corrections that are re-marked (default 250000)")
	cmd.Flags().BoolVar(&keepOpen, "keep-open", false, "copy late corrections as they are instead of re-marking their month")
	return cmd
}

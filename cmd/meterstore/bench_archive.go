package main

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"text/tabwriter"

	"github.com/meterstore/meterstore/cmd/meterstore/internal/workload/archivebench"
	"github.com/meterstore/meterstore/metering"
	"github.com/spf13/cobra"
)

// benchArchiveResult is the JSON of bench archive.
type benchArchiveResult struct {
	Storage    *archivebench.StorageResult    `json:"storage,omitempty"`
	Throughput *archivebench.ThroughputResult `json:"throughput,omitempty"`
}

func newBenchArchive() *cobra.Command {
	f := archivebench.DefaultFixture()
	var (
		pgURL, jsonPath, start, dir string
		mode                        string
		windows                     []int
		chunkRows                   int
		heapProfile, cpuProfile     string
		inProcess, child            bool
	)
	cmd := &cobra.Command{
		Use:   "archive",
		Short: "Cold-tier bytes per reading against PostgreSQL, and archival throughput and peak RSS per window size",
		Long: `Storage: loads --meters power meters over --days Berlin days of quarter-hour
load profiles (3% of the meter-days corrected under a higher version) into a
daily-partitioned power table through the hot tier's Write, measures
pg_total_relation_size over the partition tree, indexes included, archives
everything in one cycle of daily windows and measures the Iceberg data files.
The table is declared with integrity write (checked by the writer alone), for load speed.

Throughput: for each --windows size, loads one Berlin day of as many meters
as that many readings take and times the one archival cycle that archives it,
sampling the process's resident set (VmRSS) and Go heap every 50 ms during
the cycle only. The load runs here; each archival runs in a child process of
its own, so that neither the load's nor another window's heap inflates its
figures.

Without --pg-url it starts a private PostgreSQL server with default settings.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			log := logger()
			if child {
				return archivebench.ServeChild(ctx, os.Stdin, cmd.OutOrStdout(), log)
			}
			d, err := metering.ParseDate(start)
			if err != nil {
				return err
			}
			f.Start = d
			if mode != "all" && mode != "storage" && mode != "throughput" {
				return fmt.Errorf("bench archive: --mode %q: want all, storage or throughput", mode)
			}
			url, stop, err := benchServer(ctx, pgURL, "", nil, log)
			if err != nil {
				return err
			}
			defer stop()
			var res benchArchiveResult
			w := cmd.OutOrStdout()
			if mode == "all" || mode == "storage" {
				res.Storage, err = archivebench.RunStorage(ctx, url, archivebench.StorageConfig{
					Fixture: f, Dir: dir, Progress: os.Stderr, Logger: log,
				})
				if err != nil {
					return err
				}
				printArchiveStorage(w, res.Storage)
			}
			if mode == "all" || mode == "throughput" {
				tc := archivebench.ThroughputConfig{
					Windows: windows, Fixture: f, ChunkRows: chunkRows, HeapProfile: heapProfile, CPUProfile: cpuProfile,
					Progress: os.Stderr, Logger: log,
				}
				if !inProcess {
					exe, err := os.Executable()
					if err != nil {
						return err
					}
					tc.Spawn = archivebench.Reexec(exe, []string{"bench", "archive", "--child"}, os.Stderr)
				}
				res.Throughput, err = archivebench.RunThroughput(ctx, url, tc)
				if err != nil {
					return err
				}
				printArchiveThroughput(w, res.Throughput)
			}
			return printJSON(w, jsonPath, res)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&pgURL, "pg-url", "", "PostgreSQL server to measure (default: a private one)")
	fl.StringVar(&jsonPath, "json", "", "also write the JSON result to this file")
	fl.StringVar(&mode, "mode", "all", "what to measure: all, storage or throughput")
	fl.StringVar(&dir, "dir", "", "warehouse directory of the storage run, kept afterwards (default: a temporary one)")
	fl.StringVar(&start, "start", f.Start.String(), "first Berlin day of the readings")
	fl.IntVar(&f.Meters, "meters", f.Meters, "storage: power meters, one quarter-hour load profile each")
	fl.IntVar(&f.Days, "days", f.Days, "storage: days loaded")
	fl.Float64Var(&f.CorrectionRate, "corrections", f.CorrectionRate, "share of meter-days delivered again under a higher version")
	fl.IntVar(&f.MetersPerBatch, "batch", f.MetersPerBatch, "meter-days per hot-tier write")
	fl.Uint64Var(&f.Seed, "seed", f.Seed, "seed of the generated values")
	fl.IntSliceVar(&windows, "windows", []int{1_000_000, 5_000_000}, "throughput: readings per archival window")
	fl.IntVar(&chunkRows, "chunk", 0, "throughput: rows the archiver fetches at a time (default: the archiver's)")
	fl.StringVar(&cpuProfile, "cpu-profile", "", "throughput: write each archival cycle's CPU profile to this path plus .<window>")
	fl.StringVar(&heapProfile, "heap-profile", "", "throughput: write each archival's heap profile at its live heap's peak to this path plus .<window>")
	fl.BoolVar(&inProcess, "in-process", false, "throughput: run the windows in this process, freeing memory between them")
	fl.BoolVar(&child, "child", false, "run one window as a child of bench archive (internal)")
	_ = fl.MarkHidden("child")
	return cmd
}

func printArchiveStorage(w io.Writer, r *archivebench.StorageResult) {
	f := r.Fixture
	fmt.Fprintf(w, "PostgreSQL %s, GOMAXPROCS %d: %d meters x %d days from %s, %.0f%% of meter-days corrected\n",
		r.Server, runtime.GOMAXPROCS(0), f.Meters, f.Days, f.Start, f.CorrectionRate*100)
	fmt.Fprintf(w, "power table: interval, quarter hours, daily partitions, integrity %s (for load speed)\n",
		r.Integrity)
	fmt.Fprintf(w, "loaded %d readings in %.0f s (%.0f readings/s); archived in %d windows in %.1f s (%.0f readings/s)\n\n",
		r.Readings, r.LoadSecs, r.LoadPS, r.Windows, r.ArchiveSecs, r.ArchivePS)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "tier\treadings\tbytes\tMiB\tB/reading\t\n")
	fmt.Fprintf(tw, "PostgreSQL (heap %d MiB, indexes %d MiB)\t%d\t%d\t%.1f\t%.2f\t\n",
		r.PGHeapBytes>>20, r.PGIndexBytes>>20, r.PGRows, r.PGBytes, float64(r.PGBytes)/(1<<20), r.PGBytesPerRead)
	fmt.Fprintf(tw, "cold (%d Parquet files)\t%d\t%d\t%.1f\t%.2f\t\n",
		r.ColdFiles, r.ColdReadings, r.ColdBytes, float64(r.ColdBytes)/(1<<20), r.ColdBytesPerRead)
	tw.Flush()
	fmt.Fprintf(w, "\nPostgreSQL / cold: %.0fx   (goal: cold <= 4 B/reading: %s; >= 100x: %s)\n",
		r.Ratio, yes(r.ColdBytesPerRead <= 4), yes(r.Ratio >= 100))
	fmt.Fprintf(w, "\ncold bytes by column (Parquet footers), B/reading:\n")
	printColumns(w, r.ColdColumns, r.ColdBloomBytes, r.ColdOverheadBytes, r.ColdReadings)
	fmt.Fprintf(w, "value entropy: %.3f B/reading (%d distinct values); cold / entropy as archived: %.2fx\n",
		r.ValueEntropy, r.ValueDistinct, r.VsEntropy)
	if c := r.Compacted; c != nil {
		fmt.Fprintf(w, "\nafter compacting the settled months (%d files rewritten in %.1f s): %d files, %.3f B/reading\n",
			c.Rewritten, c.Seconds, c.Files, c.BytesPerReading)
		printColumns(w, c.Columns, c.BloomBytes, c.OverheadBytes, r.ColdReadings)
		fmt.Fprintf(w, "cold / entropy: %.2fx   (goal: <= 1.2x: %s)\n", c.VsEntropy, yes(c.VsEntropy > 0 && c.VsEntropy <= 1.2))
	}
}

// printColumns prints each column's bytes a reading and what is not
// column data, of n readings.
func printColumns(w io.Writer, cols []archivebench.ColumnResult, bloom, overhead, n int64) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	for _, c := range cols {
		fmt.Fprintf(tw, "%s\t%.3f\t\n", c.Name, c.BytesPerReading)
	}
	fmt.Fprintf(tw, "not column data (of which bloom filters %.3f)\t%.3f\t\n", perReading(bloom, n), perReading(overhead, n))
	tw.Flush()
}

func perReading(b, n int64) float64 {
	if n == 0 {
		return 0
	}
	return float64(b) / float64(n)
}

func printArchiveThroughput(w io.Writer, r *archivebench.ThroughputResult) {
	fmt.Fprintf(w, "\narchival of one window per cycle, GOMAXPROCS %d\n\n", r.GOMAXPROCS)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "window\tmeters\treadings\tseconds\treadings/s\tRSS before MiB\tpeak RSS MiB\tpeak heap MiB\tpeak live heap MiB\tsamples\tprocess\t\n")
	for _, x := range r.Windows {
		fmt.Fprintf(tw, "%d\t%d\t%d\t%.2f\t%.0f\t%.1f\t%.1f\t%.1f\t%.1f\t%d\t%s\t\n",
			x.Spec.Readings, x.Spec.Fixture.Meters, x.Readings, x.Seconds, x.ReadingsPerSec,
			mib(x.RSSBefore), mib(x.PeakRSS), mib(x.PeakHeap), mib(x.PeakLiveHeap), x.Samples, x.Process)
	}
	tw.Flush()
	if n := len(r.Windows); n > 1 && r.Windows[0].PeakRSS > 0 {
		a, b := r.Windows[0], r.Windows[n-1]
		fmt.Fprintf(w, "\nwindow x%.1f: peak RSS x%.2f, peak heap x%.2f, peak live heap x%.2f   (goal: peak RSS does not grow with the window)\n",
			float64(b.Readings)/float64(a.Readings), float64(b.PeakRSS)/float64(a.PeakRSS), float64(b.PeakHeap)/float64(a.PeakHeap),
			float64(b.PeakLiveHeap)/float64(a.PeakLiveHeap))
	}
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }

func yes(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}

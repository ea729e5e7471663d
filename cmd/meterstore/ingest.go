package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/meterstore/meterstore/internal/ingest"
	"github.com/meterstore/meterstore/series"
	"github.com/meterstore/meterstore/store"
)

func newIngest() *cobra.Command {
	var (
		d                     deployment
		table, format, report string
		relations             string
		substituteBy          onceFlag
		batch                 int
	)
	cmd := &cobra.Command{
		Use:   "ingest --table T file...",
		Short: "Write readings from CSV, JSON lines or MSCONS files, in atomic batches",
		Long: `Reads readings of one table from CSV (a header naming the columns) or JSON
lines (one object per line) and writes them in atomic batches: a batch with a
bad line writes nothing and the error names the line. Batches before it stay
written; running the same files again is safe, since redelivering a written
reading is a no-op. Rows below the watermark go to the cold tier as late
corrections. "-" reads standard input.

An EDIFACT MSCONS interchange (EDI@Energy MIG 2.4c or 2.2e), recognised by its
content (UNA or UNB) or by --format mscons, is written a message at a time:
a message that breaks a rule is refused whole, naming its segment, and the
others are written; the exit status is 1 if any was refused. Consecutive
messages share a write of up to 10,000 readings, the next such group prepared
while one is written; if the store refuses a group, its messages are written
one by one, so that only the message at fault is refused.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			// Refused before the deployment is opened: a usage error
			// is permanent, whatever the state of the servers.
			if batch < 1 || batch > ingest.MaxBatchRows {
				return fmt.Errorf("--batch %d: want 1 to %d readings", batch, ingest.MaxBatchRows)
			}
			if err := checkInputs(files); err != nil {
				return err
			}
			if substituteBy.set {
				// Empty, it would write the readings as measured
				// values; the store checks the rest again.
				if err := series.CheckAttribution(substituteBy.v); err != nil {
					return fmt.Errorf("--substitute-by: %w", err)
				}
			}
			ctx := cmd.Context()
			s, _, err := d.openAt(cmd.Context())
			if err != nil {
				return err
			}
			defer s.Close()
			decl, err := s.Declaration(table)
			if err != nil {
				return err
			}
			var rep io.Writer
			if report != "" {
				f, err := os.Create(report)
				if err != nil {
					return err
				}
				defer f.Close()
				fmt.Fprintln(f, "line,status")
				rep = f
			}
			// src is the file being read: a table with provenance
			// columns records it (an MSCONS interchange records its own
			// references instead of the file name).
			var src store.Source
			opts := func() store.WriteOptions {
				return store.WriteOptions{Substitute: substituteBy.set, By: substituteBy.v, Source: src}
			}
			write := func(ctx context.Context, rows []series.Reading) ([]series.Status, int, error) {
				res, err := s.WriteWith(ctx, table, rows, opts())
				return res.Status, res.Late, err
			}
			// A file's batches, and an interchange's groups of messages,
			// are written as a stream: the next one is decoded and
			// prepared while one is written.
			stream := func(ctx context.Context, next func() ([]series.Reading, error), done func([]series.Status, int, error) error) error {
				return s.WriteEach(ctx, table, next, func(res store.WriteResult, err error) error {
					return done(res.Status, res.Late, err)
				}, opts())
			}
			var maloOf map[string]string
			if relations != "" {
				f, err := os.Open(relations)
				if err != nil {
					return err
				}
				maloOf, err = ingest.ReadRelations(f)
				f.Close()
				if err != nil {
					return fmt.Errorf("--melo-malo %s: %w", relations, err)
				}
			}
			start := time.Now()
			refused := 0
			for _, name := range files {
				f, err := fileFormat(name, format)
				if err != nil {
					return err
				}
				src = store.Source{Kind: series.SourceMSCONS}
				if name != "-" {
					src.Ref = name
				}
				if f == 0 || f == ingest.MSCONS {
					n, done, err := ingestMSCONS(ctx, cmd.OutOrStdout(), name, f, &decl, write, stream, maloOf)
					if err != nil {
						return err
					}
					refused += n
					if done {
						continue
					}
					f, err = fileFormat(name, format)
					if err != nil || f == 0 {
						return fmt.Errorf("%s: cannot tell the format from the name or the content; use --format csv, jsonl or mscons", shownName(name))
					}
				}
				src.Kind = series.SourceCSV
				if f == ingest.JSONLines {
					src.Kind = series.SourceJSON
				}
				sum, err := ingestFile(ctx, name, f, &decl, stream, batch, rep, start)
				fmt.Fprintf(cmd.OutOrStdout(), "%s: %d readings in %d batches: %d inserted, %d already present, %d late to the cold tier; %d superseded, %d shadowed, %d refused\n",
					shownName(name), sum.Records, sum.Batches, sum.Inserted, sum.Present, sum.Late, sum.Superseded, sum.Shadowed, sum.Refused)
				if err != nil {
					if sum.Through > 0 {
						return fmt.Errorf("%s: lines up to %d are written; %w", shownName(name), sum.Through, err)
					}
					return fmt.Errorf("%s: %w", shownName(name), err)
				}
			}
			if refused > 0 {
				return fmt.Errorf("%d MSCONS messages refused; the others are written", refused)
			}
			return nil
		},
	}
	d.flags(cmd, false)
	f := cmd.Flags()
	f.StringVar(&table, "table", "", "the table to write to (required)")
	f.StringVar(&format, "format", "", "csv, jsonl or mscons (default: from the file name's extension, or MSCONS by content)")
	f.StringVar(&relations, "melo-malo", "", "a CSV of melo_id,malo_id: the market location of each metering location an MSCONS message names")
	f.StringVar(&report, "report", "", "write a CSV of line,status (inserted, present, superseded, shadowed) per reading to this file")
	f.Var(&substituteBy, "substitute-by", "the readings are substitute values (quality 67, no version) formed by this market partner: each gets the next version of its reading and wins over what is stored (docs/ingest.md)")
	f.IntVar(&batch, "batch", ingest.DefaultBatchRows, fmt.Sprintf("readings per atomic batch, 1 to %d", ingest.MaxBatchRows))
	cmd.MarkFlagRequired("table")
	return cmd
}

// checkInputs refuses an input that is missing or not a regular file
// (a directory, say) before anything is opened or written: no retry can
// make it readable.
func checkInputs(files []string) error {
	for _, name := range files {
		if name == "-" {
			continue
		}
		fi, err := os.Stat(name)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return fmt.Errorf("input %s: no such file", shownName(name))
		case err != nil:
			return fmt.Errorf("input %s: %w", shownName(name), err)
		case fi.IsDir():
			return fmt.Errorf("input %s is a directory; name the files in it", shownName(name))
		}
	}
	return nil
}

func fileFormat(name, flag string) (ingest.Format, error) {
	if flag != "" {
		return ingest.ParseFormat(flag)
	}
	switch strings.ToLower(filepath.Ext(name)) {
	case ".csv":
		return ingest.CSV, nil
	case ".jsonl", ".ndjson", ".json":
		return ingest.JSONLines, nil
	case ".edi", ".mscons":
		return ingest.MSCONS, nil
	}
	// The content tells.
	return 0, nil
}

// ingestMSCONS writes the file as an MSCONS interchange when f says so or,
// with f zero, when its content starts like one; done is false when it
// does not, and nothing was read. It prints a line per message and
// returns how many were refused.
func ingestMSCONS(ctx context.Context, out io.Writer, name string, f ingest.Format, t *series.Table,
	write ingest.WriteFunc, stream ingest.StreamFunc, maloOf map[string]string) (refused int, done bool, err error) {
	in := os.Stdin
	if name != "-" {
		if in, err = os.Open(name); err != nil {
			return 0, false, err
		}
		defer in.Close()
	}
	br := bufio.NewReader(in)
	if f == 0 {
		head, _ := br.Peek(6)
		if f, _ = ingest.Sniff(head); f != ingest.MSCONS {
			if name == "-" {
				return 0, false, errors.New("standard input: name its format with --format csv, jsonl or mscons")
			}
			return 0, false, nil
		}
	}
	reps, err := ingest.RunMSCONS(ctx, br, t, write, ingest.MSCONSOptions{MaLoOf: maloOf, Stream: stream})
	for _, r := range reps {
		if r.Err != nil {
			refused++
			fmt.Fprintf(out, "%s: message %d %q refused, nothing of it written: %s\n", shownName(name), r.Number, r.Ref, shownError(r.Err))
			continue
		}
		fmt.Fprintf(out, "%s: message %d %q (document %s): %d readings: %d inserted, %d already present, %d late to the cold tier; %d superseded, %d shadowed\n",
			shownName(name), r.Number, r.Ref, shownName(r.Document), r.Readings, r.Inserted, r.Present, r.Late, r.Superseded, r.Shadowed)
	}
	if err != nil {
		return refused, true, fmt.Errorf("%s: %w", shownName(name), err)
	}
	return refused, true, nil
}

func ingestFile(ctx context.Context, name string, f ingest.Format, t *series.Table, stream ingest.StreamFunc,
	batch int, rep io.Writer, start time.Time) (ingest.Summary, error) {
	in := os.Stdin
	if name != "-" {
		var err error
		if in, err = os.Open(name); err != nil {
			return ingest.Summary{}, err
		}
		defer in.Close()
	}
	dec, err := ingest.NewDecoder(in, f, t)
	if err != nil {
		return ingest.Summary{}, err
	}
	sum, err := ingest.RunStream(ctx, dec, stream, ingest.Options{
		BatchRows: batch,
		Report:    rep,
		Progress: func(s ingest.Summary) {
			el := time.Since(start)
			fmt.Fprintf(os.Stderr, "\r  %s: line %d, %d readings, %.0f readings/s   ", shownName(name), s.Through, s.Records, float64(s.Records)/el.Seconds())
		},
	})
	fmt.Fprintln(os.Stderr)
	return sum, err
}

// onceFlag is a string flag given at most once: a second value is refused
// rather than silently taking the first one's place.
type onceFlag struct {
	v   string
	set bool
}

func (f *onceFlag) String() string { return f.v }

func (f *onceFlag) Set(s string) error {
	if f.set {
		return fmt.Errorf("given twice: give it once")
	}
	f.v, f.set = s, true
	return nil
}

func (f *onceFlag) Type() string { return "string" }

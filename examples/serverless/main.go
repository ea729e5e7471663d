// Command serverless shows an Iceberg table on a plain directory with no
// catalog server and no database: the commit log lives next to the data.
//
//	go run ./examples/serverless [-dir DIR]
//
// It creates a table, then starts two processes that load the same snapshot
// and append at the same moment. Exactly one commit wins; the other gets
// Iceberg's commit-failed error and leaves nothing behind. Finally it scans
// the table.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/meterstore/meterstore/catalog"
	"github.com/meterstore/meterstore/consensus/bloblog"
)

var ident = table.Identifier{"demo", "readings"}

func main() {
	dir := flag.String("dir", "", "warehouse directory (default: a new temporary one)")
	writer := flag.String("append-as", "", "internal: append as this writer once the go file exists")
	flag.Parse()
	ctx := context.Background()
	var err error
	if *writer != "" {
		err = appendAs(ctx, *dir, *writer)
	} else {
		err = run(ctx, *dir)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "serverless:", err)
		os.Exit(1)
	}
}

func open(ctx context.Context, dir string) (*catalog.Catalog, error) {
	wh, err := catalog.OpenWarehouse(ctx, "file://"+dir)
	if err != nil {
		return nil, err
	}
	log, err := bloblog.New(wh.Bucket, "_log/")
	if err != nil {
		return nil, err
	}
	return catalog.New(catalog.Options{Warehouse: wh, Log: log})
}

var schema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "malo_id", Type: iceberg.PrimitiveTypes.String, Required: true},
	iceberg.NestedField{ID: 2, Name: "from", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
	iceberg.NestedField{ID: 3, Name: "kwh", Type: iceberg.PrimitiveTypes.Float64, Required: true},
	iceberg.NestedField{ID: 4, Name: "writer", Type: iceberg.PrimitiveTypes.String, Required: true},
)

func run(ctx context.Context, dir string) error {
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "meterstore-serverless-"); err != nil {
			return err
		}
	}
	c, err := open(ctx, dir)
	if err != nil {
		return err
	}
	if err := c.CreateNamespace(ctx, table.Identifier{"demo"}, nil); err != nil && !errors.Is(err, icecatalog.ErrNamespaceAlreadyExists) {
		return err
	}
	spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "from_month", Transform: iceberg.MonthTransform{}})
	if _, err := c.CreateTable(ctx, ident, schema, icecatalog.WithPartitionSpec(&spec)); err != nil {
		return err
	}
	fmt.Printf("created %s in %s (log in %s)\n", "demo.readings", dir, filepath.Join(dir, "_log"))

	self, err := os.Executable()
	if err != nil {
		return err
	}
	var procs []*exec.Cmd
	for _, w := range []string{"A", "B"} {
		cmd := exec.CommandContext(ctx, self, "-dir", dir, "-append-as", w)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stdout
		if err := cmd.Start(); err != nil {
			return err
		}
		procs = append(procs, cmd)
	}
	// Both writers hold the same snapshot before either commits.
	for _, w := range []string{"A", "B"} {
		if err := waitFor(filepath.Join(dir, "ready-"+w)); err != nil {
			return err
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "go"), nil, 0o644); err != nil {
		return err
	}
	for _, p := range procs {
		p.Wait() // the loser exits 2; its output says why
	}
	t, err := c.LoadTable(ctx, ident)
	if err != nil {
		return err
	}
	at, err := t.Scan().ToArrowTable(ctx)
	if err != nil {
		return err
	}
	defer at.Release()
	fmt.Printf("scan: %d rows in snapshot %d\n", at.NumRows(), t.CurrentSnapshot().SnapshotID)
	tr := array.NewTableReader(at, 0)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		for i := range int(rec.NumRows()) {
			fmt.Printf("  %s %s %.3f kWh by %s\n",
				rec.Column(0).(*array.String).Value(i),
				rec.Column(1).(*array.Timestamp).Value(i).ToTime(arrow.Microsecond).Format(time.RFC3339),
				rec.Column(2).(*array.Float64).Value(i),
				rec.Column(3).(*array.String).Value(i))
		}
	}
	hist, err := c.History(ctx, ident)
	if err != nil {
		return err
	}
	fmt.Printf("commit log: %d entries; the newest is %s\n", len(hist), hist[len(hist)-1].MetadataLocation)
	return nil
}

func appendAs(ctx context.Context, dir, writer string) error {
	c, err := open(ctx, dir)
	if err != nil {
		return err
	}
	t, err := c.LoadTable(ctx, ident)
	if err != nil {
		return err
	}
	sc, err := table.SchemaToArrowSchema(schema, nil, true, false)
	if err != nil {
		return err
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	start := time.Date(2026, 3, 29, 0, 0, 0, 0, time.UTC)
	for i := range 4 {
		b.Field(0).(*array.StringBuilder).Append("51238696781")
		b.Field(1).(*array.TimestampBuilder).Append(arrow.Timestamp(start.Add(time.Duration(i) * 15 * time.Minute).UnixMicro()))
		b.Field(2).(*array.Float64Builder).Append(0.25 * float64(i+1))
		b.Field(3).(*array.StringBuilder).Append(writer)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	at := array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
	defer at.Release()
	tx := t.NewTransaction()
	if err := tx.AppendTable(ctx, at, 4, nil); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "ready-"+writer), nil, 0o644); err != nil {
		return err
	}
	if err := waitFor(filepath.Join(dir, "go")); err != nil {
		return err
	}
	if _, err := tx.Commit(ctx); errors.Is(err, table.ErrCommitFailed) {
		fmt.Printf("writer %s lost the race: %v\n", writer, err)
		os.Exit(2)
	} else if err != nil {
		return err
	}
	fmt.Printf("writer %s committed\n", writer)
	return nil
}

// waitFor polls for a file, for at most a minute.
func waitFor(path string) error {
	for range 6000 {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("timed out waiting for %s", path)
}

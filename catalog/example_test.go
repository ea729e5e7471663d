package catalog_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/meterstore/meterstore/catalog"
	"github.com/meterstore/meterstore/consensus/bloblog"
)

// A serverless commit: the table's log lives in the warehouse itself, and
// a commit is a PutIfAbsent of the log's next entry. Two transactions
// prepared on the same snapshot both try to commit; the log takes one, and
// the other is told so, with nothing written.
func Example_serverlessCommit() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "meterstore-catalog-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	wh, err := catalog.OpenWarehouse(ctx, "file://"+dir)
	if err != nil {
		log.Fatal(err)
	}
	defer wh.Bucket.Close()
	l, err := bloblog.New(wh.Bucket, "_log/")
	if err != nil {
		log.Fatal(err)
	}
	cat, err := catalog.New(catalog.Options{Warehouse: wh, Log: l})
	if err != nil {
		log.Fatal(err)
	}
	if err := cat.CreateNamespace(ctx, table.Identifier{"demo"}, nil); err != nil {
		log.Fatal(err)
	}
	schema := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "malo_id", Type: iceberg.PrimitiveTypes.String, Required: true})
	tbl, err := cat.CreateTable(ctx, table.Identifier{"demo", "readings"}, schema)
	if err != nil {
		log.Fatal(err)
	}

	// Each appends a snapshot (with no files) on the table as it is now.
	a, b := tbl.NewTransaction(), tbl.NewTransaction()
	if err := a.AddFiles(ctx, nil, iceberg.Properties{"writer": "a"}, true); err != nil {
		log.Fatal(err)
	}
	if err := b.AddFiles(ctx, nil, iceberg.Properties{"writer": "b"}, true); err != nil {
		log.Fatal(err)
	}
	_, errA := a.Commit(ctx)
	_, errB := b.Commit(ctx)
	fmt.Println("a:", errA)
	fmt.Println("b lost the race:", errors.Is(errB, table.ErrCommitFailed))

	now, err := cat.LoadTable(ctx, table.Identifier{"demo", "readings"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("snapshot by:", now.CurrentSnapshot().Summary.Properties["writer"])
	// Output:
	// a: <nil>
	// b lost the race: true
	// snapshot by: a
}

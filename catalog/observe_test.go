package catalog_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/meterstore/meterstore/catalog"
)

// TestObserveCAS: every compare-and-set on the log reaches ObserveCAS,
// named by what it committed: the registry (no table) for a namespace and
// a table's name, the table for its commits; and a commit that loses its
// race after the head was read is reported as the mismatch it is.
func TestObserveCAS(t *testing.T) {
	ctx := t.Context()
	wh := fileWarehouse(t)
	log := blobLog(t, wh.Bucket)
	var (
		mu     sync.Mutex
		events []string
	)
	other, err := catalog.New(catalog.Options{Warehouse: wh, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	race := false
	c, err := catalog.New(catalog.Options{Warehouse: wh, Log: log, Check: func(ident table.Identifier, _, _ table.Metadata) error {
		if !race {
			return nil
		}
		race = false
		// Another writer commits between this commit's read of the
		// head and its compare-and-set.
		tbl, err := other.LoadTable(ctx, ident)
		if err != nil {
			return err
		}
		tx := tbl.NewTransaction()
		if err := tx.SetProperties(iceberg.Properties{"raced": "yes"}); err != nil {
			return err
		}
		_, err = tx.Commit(ctx)
		return err
	},
		ObserveCAS: func(_ context.Context, e catalog.CASEvent) {
			name := "<registry>"
			if e.Table != nil {
				name = strings.Join(e.Table, ".")
			}
			if e.Duration < 0 {
				t.Errorf("negative duration %v", e.Duration)
			}
			mu.Lock()
			events = append(events, name+" "+e.Result.String())
			mu.Unlock()
		}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CreateNamespace(ctx, table.Identifier{"metering"}, nil); err != nil {
		t.Fatal(err)
	}
	tbl := createTable(t, c, "power", nil)
	race = true
	tx := tbl.NewTransaction()
	if err := tx.SetProperties(iceberg.Properties{"mine": "yes"}); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err == nil {
		t.Fatal("a commit that lost its race succeeded")
	}
	want := []string{
		"<registry> Committed",               // the namespace
		"<registry> Committed",               // the table's name
		"metering.power Committed",           // its creation
		"metering.power ExpectationMismatch", // the race lost
	}
	if !slices.Equal(events, want) {
		t.Errorf("observed %q, want %q", events, want)
	}
}

package store

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	icecatalog "github.com/apache/iceberg-go/catalog"
	icebergio "github.com/apache/iceberg-go/io"
	icetable "github.com/apache/iceberg-go/table"

	"github.com/meterstore/meterstore/internal/cold"
)

var errCut = errors.New("cut short")

// cutCatalog is a catalog whose tables delete their files through cutIO
// and whose drops fail while failDrop is set: a purge through it stops
// where a crash would.
type cutCatalog struct {
	icecatalog.Catalog
	removes  atomic.Int64 // deletions left before one fails
	failDrop atomic.Bool
}

func (c *cutCatalog) LoadTable(ctx context.Context, ident icetable.Identifier) (*icetable.Table, error) {
	t, err := c.Catalog.LoadTable(ctx, ident)
	if err != nil {
		return nil, err
	}
	fsF := func(ctx context.Context) (icebergio.IO, error) {
		fs, err := t.FS(ctx)
		if err != nil {
			return nil, err
		}
		l, ok := fs.(icebergio.ListableIO)
		if !ok {
			return nil, errors.New("the file IO cannot list")
		}
		return cutIO{l, c}, nil
	}
	return icetable.New(t.Identifier(), t.Metadata(), t.MetadataLocation(), fsF, c), nil
}

func (c *cutCatalog) DropTable(ctx context.Context, ident icetable.Identifier) error {
	if c.failDrop.Load() {
		return errCut
	}
	return c.Catalog.DropTable(ctx, ident)
}

type cutIO struct {
	icebergio.ListableIO
	c *cutCatalog
}

func (f cutIO) Remove(name string) error {
	if f.c.removes.Add(-1) < 0 {
		return errCut
	}
	return f.ListableIO.Remove(name)
}

// TestPurgeRerunAfterCut cuts a store's purge short after PostgreSQL is
// dropped: before the first cold file is deleted, after some, and before
// the catalog entry is dropped, when every file is gone. A second run
// finishes it: no PostgreSQL table, no catalog entry, no file under the
// table's location, no watermark record; and a run by a store opened
// afterwards (which declares the table afresh) is no error.
func TestPurgeRerunAfterCut(t *testing.T) {
	for _, tc := range []struct {
		name     string
		removes  int64 // -1: all
		failDrop bool
	}{
		{"before the first file", 0, false},
		{"after three files", 3, false},
		{"after ten files", 10, false},
		{"before the drop", -1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			e := newEnv(t)
			s := e.open(t, Options{})
			if err := s.CreatePartitions(ctx, dayN(0), dayN(10)); err != nil {
				t.Fatal(err)
			}
			for d := range 5 {
				mustWrite(t, s, []Reading{qh(1, d, 4, "A", 1, int64(1000+d))})
			}
			for _, now := range []int{4, 5, 6} {
				if _, err := s.Archive(ctx, "power", dayN(now)); err != nil {
					t.Fatal(err)
				}
			}
			if n := len(warehouseFiles(t, e.dir, "meterstore/power")); n < 12 {
				t.Fatalf("fixture: %d files", n)
			}
			s.Close()

			cut := &cutCatalog{Catalog: e.cat}
			cut.removes.Store(tc.removes)
			if tc.removes < 0 {
				cut.removes.Store(1 << 40)
			}
			cut.failDrop.Store(tc.failDrop)
			cs := (&testEnv{pool: e.pool, cat: cut, dir: e.dir}).open(t, Options{})
			if _, err := cs.Purge(ctx, "power", "power"); !errors.Is(err, errCut) {
				t.Fatalf("the cut purge: %v", err)
			}
			if hotTableExists(t, e, "power") {
				t.Fatal("the cut purge left the PostgreSQL table, which goes first")
			}
			if _, err := e.cat.LoadTable(ctx, icetable.Identifier{cold.DefaultNamespace, "power"}); errors.Is(err, icecatalog.ErrNoSuchTable) {
				t.Error("the cut purge dropped the catalog entry before the files were deleted")
			}

			// The same store runs it again: a store opened anew would
			// declare the table afresh at the same location first.
			cut.removes.Store(1 << 40)
			cut.failDrop.Store(false)
			if _, err := cs.Purge(ctx, "power", "power"); err != nil {
				t.Fatalf("the rerun: %v", err)
			}
			cs.Close()
			if left := warehouseFiles(t, e.dir, "meterstore/power"); len(left) > 0 {
				t.Errorf("the rerun left %v", left)
			}
			if _, err := e.cat.LoadTable(ctx, icetable.Identifier{cold.DefaultNamespace, "power"}); !errors.Is(err, icecatalog.ErrNoSuchTable) {
				t.Errorf("the catalog entry is left: %v", err)
			}
			if hotTableExists(t, e, "power") {
				t.Error("the PostgreSQL table is left")
			}
			var n int
			if err := e.pool.QueryRow(ctx, `SELECT count(*) FROM meterstore.archive_watermarks WHERE table_name = 'power'`).Scan(&n); err != nil || n != 0 {
				t.Errorf("watermark records left: %d, %v", n, err)
			}
			s = e.open(t, Options{})
			defer s.Close()
			if _, err := s.Purge(ctx, "power", "power"); err != nil {
				t.Errorf("a third run: %v", err)
			}
		})
	}
}

// hotTableExists reports whether the PostgreSQL table of name exists.
func hotTableExists(t *testing.T, e *testEnv, name string) bool {
	t.Helper()
	var ok bool
	if err := e.pool.QueryRow(t.Context(), `SELECT to_regclass($1) IS NOT NULL`, fmt.Sprintf("meterstore.%q", name)).Scan(&ok); err != nil {
		t.Fatal(err)
	}
	return ok
}

package catalog_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/meterstore/meterstore/blob"
	"github.com/meterstore/meterstore/catalog"
	"github.com/meterstore/meterstore/consensus"
	"github.com/meterstore/meterstore/consensus/postgres"
	"github.com/meterstore/meterstore/internal/pgtest"
	"github.com/meterstore/meterstore/internal/s3test"
)

// storedLog is a table log together with a count of the entries its
// backend physically stores for a table, deleted or not by a truncation:
// rows in PostgreSQL, objects in the bucket.
type storedLog struct {
	name string
	open func(t *testing.T) (catalog.Warehouse, consensus.Log, func(table string) int)
}

func storedLogs() []storedLog {
	blobStored := func(t *testing.T, wh catalog.Warehouse) (catalog.Warehouse, consensus.Log, func(string) int) {
		return wh, blobLog(t, wh.Bucket), func(name string) int { return countEntryObjects(t, wh.Bucket, name) }
	}
	return []storedLog{
		{"postgres", func(t *testing.T) (catalog.Warehouse, consensus.Log, func(string) int) {
			url := pgtest.NewDB(t)
			cfg, err := pgxpool.ParseConfig(url)
			if err != nil {
				t.Fatal(err)
			}
			l, err := postgres.Open(t.Context(), cfg, postgres.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(l.Close)
			pool, err := pgxpool.New(t.Context(), url)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(pool.Close)
			return fileWarehouse(t), l, func(name string) int {
				var n int
				err := pool.QueryRow(t.Context(), `SELECT count(*) FROM `+l.Table()+
					` WHERE shard = $1 AND seqno >= 0`, "table/metering."+name).Scan(&n)
				if err != nil {
					t.Fatal(err)
				}
				return n
			}
		}},
		{"serverless", func(t *testing.T) (catalog.Warehouse, consensus.Log, func(string) int) {
			return blobStored(t, fileWarehouse(t))
		}},
		{"serverless-s3", func(t *testing.T) (catalog.Warehouse, consensus.Log, func(string) int) {
			wh, err := catalog.OpenWarehouse(t.Context(), s3test.URL(t, s3test.NewBucket(t)))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { wh.Bucket.Close() })
			return blobStored(t, wh)
		}},
	}
}

// countEntryObjects counts the entry objects bloblog keeps for table
// metering.<name> under the catalog's "_log/" prefix.
func countEntryObjects(t *testing.T, b *blob.Bucket, name string) int {
	t.Helper()
	n := 0
	opts := blob.ListOptions{}
	for range 1000 {
		page, err := b.List(t.Context(), "_log/table", opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Objects {
			if strings.Contains(o.Key, "metering."+name+"/e/") {
				n++
			}
		}
		if page.Next == "" {
			return n
		}
		opts.StartAfter = page.Next
	}
	t.Fatal("listing did not end")
	return 0
}

// TestAgedTableLogIsBounded commits 300 times to one table and checks that
// its log, as read and as stored, holds a bounded tail, and that what
// readers need still works on it: the current table, time travel to a
// snapshot older than the tail, History, LoadTableAt within the tail, and
// fork detection in the metadata mirror. A table whose truncation is
// switched off shows that the counts would catch a log that grows.
func TestAgedTableLogIsBounded(t *testing.T) {
	const commits = 300
	keep := catalog.DefaultTableLogKeep
	maxKept := keep + keep/2 - 1
	for _, sl := range storedLogs() {
		t.Run(sl.name, func(t *testing.T) {
			wh, l, stored := sl.open(t)
			c, err := catalog.New(catalog.Options{Warehouse: wh, Log: l})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.CreateNamespace(t.Context(), table.Identifier{"metering"}, nil); err != nil {
				t.Fatal(err)
			}
			ident := table.Identifier{"metering", "aged"}
			tbl := createTable(t, c, "aged", nil)
			if tbl, err = appendRows(t, tbl, "first", 4, nil); err != nil {
				t.Fatal(err)
			}
			first := tbl.CurrentSnapshot().SnapshotID
			for i := range commits {
				tx := tbl.NewTransaction()
				if err := tx.SetProperties(iceberg.Properties{"aged.n": fmt.Sprint(i)}); err != nil {
					t.Fatal(err)
				}
				if tbl, err = tx.Commit(t.Context()); err != nil {
					t.Fatalf("commit %d: %v", i, err)
				}
				if i == commits/2 {
					if tbl, err = appendRows(t, tbl, "middle", 4, nil); err != nil {
						t.Fatal(err)
					}
				}
			}
			headSeq := int64(commits + 2) // create, two appends, the property commits
			hist, err := c.History(t.Context(), ident)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(hist); n < keep || n > maxKept {
				t.Fatalf("History has %d commits after %d, want %d..%d", n, headSeq+1, keep, maxKept)
			}
			for i, h := range hist {
				if want := headSeq - int64(len(hist)-1-i); h.Seq != want {
					t.Fatalf("History[%d] is commit %d, want %d: not the contiguous newest tail", i, h.Seq, want)
				}
			}
			if n := stored("aged"); n < keep || n > maxKept {
				t.Fatalf("the backend stores %d entries of the table, want %d..%d", n, keep, maxKept)
			}

			cur, err := c.LoadTable(t.Context(), ident)
			if err != nil {
				t.Fatal(err)
			}
			if got := cur.Properties()["aged.n"]; got != fmt.Sprint(commits-1) {
				t.Fatalf("current table has aged.n=%q, want %d", got, commits-1)
			}
			if got := writers(t, cur); len(got) != 8 {
				t.Fatalf("current table has %d rows, want 8", len(got))
			}
			// The first snapshot's commit left the log long ago; the
			// metadata still reaches it.
			if got := writers(t, cur, table.WithSnapshotID(first)); len(got) != 4 || !strings.HasPrefix(got[0], "first") {
				t.Fatalf("the first snapshot reads %v, want the 4 first rows", got)
			}
			old, err := c.LoadTableAt(t.Context(), ident, hist[0].Seq)
			if err != nil {
				t.Fatal(err)
			}
			if old.Properties()["aged.n"] == "" {
				t.Fatalf("the oldest kept commit %d has no aged.n", hist[0].Seq)
			}
			if _, err := c.LoadTableAt(t.Context(), ident, 0); !errors.Is(err, icecatalog.ErrNoSuchTable) {
				t.Fatalf("LoadTableAt(0) after truncation: %v, want ErrNoSuchTable", err)
			}

			// Fork detection on the truncated log: clean first, then a
			// foreign file past the head and a foreign rewrite of the head.
			if err := c.VerifyMirror(t.Context(), ident); err != nil {
				t.Fatalf("a mirror MeterStore alone wrote: %v", err)
			}
			dir := "metering/aged/metadata"
			headV := fmt.Sprintf("%s/v%d.metadata.json", dir, headSeq+1)
			data, err := wh.Bucket.Get(t.Context(), headV)
			if err != nil {
				t.Fatal(err)
			}
			tampered := strings.Replace(string(data), fmt.Sprintf(`"aged.n":"%d"`, commits-1), `"aged.n":"foreign"`, 1)
			if tampered == string(data) {
				t.Fatal("the head's mirror holds no aged.n to tamper with")
			}
			if err := wh.Bucket.Put(t.Context(), headV, []byte(tampered)); err != nil {
				t.Fatal(err)
			}
			wantFork(t, c.VerifyMirror(t.Context(), ident), headV)
			if err := wh.Bucket.Put(t.Context(), headV, data); err != nil {
				t.Fatal(err)
			}
			beyond := fmt.Sprintf("%s/v%d.metadata.json", dir, headSeq+2)
			if err := wh.Bucket.Put(t.Context(), beyond, data); err != nil {
				t.Fatal(err)
			}
			wantFork(t, c.CheckMirror(t.Context(), ident), beyond)
		})
	}
}

// TestUntrimmedTableLogGrows is the counterpart with truncation switched
// off: the same counts see every commit, so the bounds above are not met
// by accident.
func TestUntrimmedTableLogGrows(t *testing.T) {
	const commits = 100
	for _, sl := range storedLogs()[:2] {
		t.Run(sl.name, func(t *testing.T) {
			wh, l, stored := sl.open(t)
			c, err := catalog.New(catalog.Options{Warehouse: wh, Log: l, TableLogKeep: -1})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.CreateNamespace(t.Context(), table.Identifier{"metering"}, nil); err != nil {
				t.Fatal(err)
			}
			tbl := createTable(t, c, "aged", nil)
			for i := range commits {
				tx := tbl.NewTransaction()
				if err := tx.SetProperties(iceberg.Properties{"aged.n": fmt.Sprint(i)}); err != nil {
					t.Fatal(err)
				}
				if tbl, err = tx.Commit(t.Context()); err != nil {
					t.Fatalf("commit %d: %v", i, err)
				}
			}
			hist, err := c.History(t.Context(), table.Identifier{"metering", "aged"})
			if err != nil {
				t.Fatal(err)
			}
			if len(hist) != commits+1 || stored("aged") != commits+1 {
				t.Fatalf("History %d, stored %d; want every one of %d commits", len(hist), stored("aged"), commits+1)
			}
		})
	}
}

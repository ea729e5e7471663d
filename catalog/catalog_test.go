package catalog_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/meterstore/meterstore/blob"
	"github.com/meterstore/meterstore/catalog"
	"github.com/meterstore/meterstore/catalog/catalogtest"
	"github.com/meterstore/meterstore/consensus"
	"github.com/meterstore/meterstore/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// The helpers the catalog's tests share with the REST catalog's.
type backend struct {
	name string
	open func(t *testing.T) *catalog.Catalog
}

func backends() []backend {
	var out []backend
	for _, b := range catalogtest.Backends() {
		out = append(out, backend{b.Name, b.Open})
	}
	return out
}

var (
	fileWarehouse = catalogtest.FileWarehouse
	pgLog         = catalogtest.PGLog
	blobLog       = catalogtest.BlobLog
	newCatalog    = catalogtest.NewCatalog
	createTable   = catalogtest.CreateTable
	rows          = catalogtest.Rows
	appendRows    = catalogtest.AppendRows
	writers       = catalogtest.Writers
	testSchema    = catalogtest.Schema
)

func TestCreateAppendScan(t *testing.T) {
	for _, be := range backends() {
		t.Run(be.name, func(t *testing.T) {
			c := be.open(t)
			tbl := createTable(t, c, "power", nil)
			if v := tbl.Metadata().Version(); v != 2 {
				t.Fatalf("format version %d, want 2", v)
			}
			loaded, err := c.LoadTable(t.Context(), table.Identifier{"metering", "power"})
			if err != nil {
				t.Fatal(err)
			}
			if v := loaded.Metadata().Version(); v != 2 {
				t.Fatalf("format version after load %d, want 2", v)
			}
			spec := loaded.Spec()
			if spec.NumFields() != 1 || spec.Field(0).Transform.String() != "month" {
				t.Fatalf("partition spec %v, want month(from)", spec)
			}
			tbl, err = appendRows(t, tbl, "w", 200, iceberg.Properties{"meterstore.watermark": "2026-02-01T00:00:00Z"})
			if err != nil {
				t.Fatal(err)
			}
			if got := writers(t, tbl); len(got) != 200 {
				t.Fatalf("scanned %d rows, want 200", len(got))
			}
			// The rows cross a month boundary: two partitions, two files at least.
			tasks, err := tbl.Scan().PlanFiles(t.Context())
			if err != nil || len(tasks) < 2 {
				t.Fatalf("planned %d files (%v), want one per month", len(tasks), err)
			}
			if got := tbl.CurrentSnapshot().Summary.Properties["meterstore.watermark"]; got != "2026-02-01T00:00:00Z" {
				t.Fatalf("snapshot summary watermark %q", got)
			}
			hist, err := c.History(t.Context(), table.Identifier{"metering", "power"})
			if err != nil || len(hist) != 2 {
				t.Fatalf("history %v, %v; want create and append", hist, err)
			}
		})
	}
}

// TestConflictLeavesNoTrace is the seed's first scenario: two transactions
// start from the same snapshot; the first commits; the second fails with
// the commit-failed error and leaves no visible trace.
func TestConflictLeavesNoTrace(t *testing.T) {
	for _, be := range backends() {
		t.Run(be.name, func(t *testing.T) {
			c := be.open(t)
			tbl := createTable(t, c, "power", nil)
			tbl, err := appendRows(t, tbl, "base", 10, nil)
			if err != nil {
				t.Fatal(err)
			}
			a, b := tbl.NewTransaction(), tbl.NewTransaction()
			start := time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC)
			for _, x := range []struct {
				tx *table.Transaction
				w  string
			}{{a, "a"}, {b, "b"}} {
				at := rows(t, x.w, start, 5)
				if err := x.tx.AppendTable(t.Context(), at, 5, nil); err != nil {
					t.Fatal(err)
				}
				at.Release()
			}
			if _, err := a.Commit(t.Context()); err != nil {
				t.Fatal(err)
			}
			metaBefore := metadataFiles(t, c)
			_, err = b.Commit(t.Context())
			if !errors.Is(err, table.ErrCommitFailed) {
				t.Fatalf("second commit: %v, want table.ErrCommitFailed", err)
			}
			if after := metadataFiles(t, c); !slices.Equal(metaBefore, after) {
				t.Fatalf("the lost commit left metadata files: before %v, after %v", metaBefore, after)
			}
			cur, err := c.LoadTable(t.Context(), table.Identifier{"metering", "power"})
			if err != nil {
				t.Fatal(err)
			}
			got := writers(t, cur)
			if len(got) != 15 || slices.ContainsFunc(got, func(s string) bool { return strings.HasPrefix(s, "b-") }) {
				t.Fatalf("table holds %v", got)
			}
			hist, _ := c.History(t.Context(), table.Identifier{"metering", "power"})
			if len(hist) != 3 {
				t.Fatalf("history has %d commits, want 3", len(hist))
			}
		})
	}
}

func metadataFiles(t *testing.T, c *catalog.Catalog) []string {
	t.Helper()
	page, err := c.Warehouse().Bucket.List(t.Context(), "metering/power/metadata/", blob.ListOptions{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, o := range page.Objects {
		if strings.HasSuffix(o.Key, ".metadata.json") {
			out = append(out, o.Key)
		}
	}
	return out
}

// TestPinnedReader is the seed's second scenario: a reader that pinned a
// snapshot keeps reading exactly it while a writer commits.
func TestPinnedReader(t *testing.T) {
	for _, be := range backends() {
		t.Run(be.name, func(t *testing.T) {
			c := be.open(t)
			ident := table.Identifier{"metering", "power"}
			tbl := createTable(t, c, "power", nil)
			tbl, err := appendRows(t, tbl, "v1", 8, nil)
			if err != nil {
				t.Fatal(err)
			}
			pinned, err := c.LoadTable(t.Context(), ident)
			if err != nil {
				t.Fatal(err)
			}
			pinnedID := pinned.CurrentSnapshot().SnapshotID
			before := writers(t, pinned)
			hist, _ := c.History(t.Context(), ident)
			pinnedSeq := hist[len(hist)-1].Seq
			for i := range 3 {
				if tbl, err = appendRows(t, tbl, fmt.Sprint("v", i+2), 8, nil); err != nil {
					t.Fatal(err)
				}
				if got := writers(t, pinned); !slices.Equal(got, before) {
					t.Fatalf("pinned reader saw %d rows after commit %d, want %d", len(got), i, len(before))
				}
			}
			cur, _ := c.LoadTable(t.Context(), ident)
			if n := len(writers(t, cur)); n != 32 {
				t.Fatalf("current table has %d rows, want 32", n)
			}
			if got := writers(t, cur, table.WithSnapshotID(pinnedID)); !slices.Equal(got, before) {
				t.Fatalf("scan of the pinned snapshot id returned %d rows", len(got))
			}
			old, err := c.LoadTableAt(t.Context(), ident, pinnedSeq)
			if err != nil {
				t.Fatal(err)
			}
			if got := writers(t, old); !slices.Equal(got, before) {
				t.Fatalf("table as of commit %d has %d rows, want %d", pinnedSeq, len(got), len(before))
			}
		})
	}
}

// TestConcurrentAppenders: writers append through the catalog at once;
// iceberg-go's retries refresh and replay their changes. No append is lost,
// none is duplicated.
func TestConcurrentAppenders(t *testing.T) {
	for _, be := range backends() {
		t.Run(be.name, func(t *testing.T) {
			got, want := concurrentAppends(t, be.open(t))
			if !slices.Equal(got, want) {
				t.Fatalf("got %d rows, want %d: appends lost or duplicated", len(got), len(want))
			}
		})
	}
}

// blindLog commits every CompareAndSet at the current head, whatever the
// caller expected: a catalog without optimistic concurrency control.
type blindLog struct{ consensus.Log }

func (b blindLog) CompareAndSet(ctx context.Context, shard string, _ int64, data []byte) (consensus.Result, error) {
	for {
		exp := consensus.Empty
		if h, ok, err := b.Head(ctx, shard); err != nil {
			return 0, err
		} else if ok {
			exp = h.SeqNo
		}
		if res, err := b.Log.CompareAndSet(ctx, shard, exp, data); err != nil || res == consensus.Committed {
			return res, err
		}
	}
}

// TestConcurrentAppendersTeeth runs the same check on a catalog whose log
// ignores the expected version; it must see appends lost.
func TestConcurrentAppendersTeeth(t *testing.T) {
	wh := fileWarehouse(t)
	got, want := concurrentAppends(t, newCatalog(t, wh, blindLog{blobLog(t, wh.Bucket)}))
	if slices.Equal(got, want) {
		t.Fatal("a catalog without concurrency control lost no append; the check has no teeth")
	}
	t.Logf("blind commits kept %d of %d rows", len(got), len(want))
}

func concurrentAppends(t *testing.T, c *catalog.Catalog) (got, want []string) {
	createTable(t, c, "power", iceberg.Properties{
		table.CommitNumRetriesKey:     "100",
		table.CommitMinRetryWaitMsKey: "1",
		table.CommitMaxRetryWaitMsKey: "50",
	})
	const writersN, appends, per = 6, 4, 3
	var wg sync.WaitGroup
	errs := make(chan error, writersN*appends)
	start := make(chan struct{})
	for w := range writersN {
		wg.Go(func() {
			<-start
			for a := range appends {
				tbl, err := c.LoadTable(context.Background(), table.Identifier{"metering", "power"})
				if err == nil {
					_, err = appendRows(t, tbl, fmt.Sprintf("w%d.%d", w, a), per, nil)
				}
				if err != nil {
					errs <- fmt.Errorf("writer %d append %d: %w", w, a, err)
				}
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	cur, err := c.LoadTable(t.Context(), table.Identifier{"metering", "power"})
	if err != nil {
		t.Fatal(err)
	}
	for w := range writersN {
		for a := range appends {
			for i := range per {
				want = append(want, fmt.Sprintf("w%d.%d-%d", w, a, i))
			}
		}
	}
	slices.Sort(want)
	return writers(t, cur), want
}

func TestDropAndRecreate(t *testing.T) {
	c := backends()[1].open(t)
	ident := table.Identifier{"metering", "power"}
	createTable(t, c, "power", nil)
	if _, err := c.CreateTable(t.Context(), ident, testSchema); !errors.Is(err, icecatalog.ErrTableAlreadyExists) {
		t.Fatalf("second create: %v", err)
	}
	if err := c.DropTable(t.Context(), ident); err != nil {
		t.Fatal(err)
	}
	if _, err := c.LoadTable(t.Context(), ident); !errors.Is(err, icecatalog.ErrNoSuchTable) {
		t.Fatalf("load after drop: %v", err)
	}
	if ok, err := c.CheckTableExists(t.Context(), ident); ok || err != nil {
		t.Fatalf("exists after drop: %v, %v", ok, err)
	}
	for id, err := range c.ListTables(t.Context(), table.Identifier{"metering"}) {
		t.Fatalf("listed %v (%v) after drop", id, err)
	}
	createTable(t, c, "power", nil)
	var listed []string
	for id, err := range c.ListTables(t.Context(), table.Identifier{"metering"}) {
		if err != nil {
			t.Fatal(err)
		}
		listed = append(listed, strings.Join(id, "."))
	}
	if !slices.Equal(listed, []string{"metering.power"}) {
		t.Fatalf("listed %v", listed)
	}
	hist, _ := c.History(t.Context(), ident)
	if len(hist) != 3 || !hist[1].Dropped {
		t.Fatalf("history %+v, want create, drop, create", hist)
	}
}

func TestBadInput(t *testing.T) {
	c := backends()[1].open(t)
	ctx := t.Context()
	for _, ident := range []table.Identifier{
		{"metering", "bad.name"}, {"metering", ""}, {"metering", "9lives"}, {"a.b", "t"},
		{"metering"}, {"x", "y", "z"}, {"metering", "../escape"},
	} {
		if _, err := c.CreateTable(ctx, ident, testSchema); !errors.Is(err, icecatalog.ErrInvalidIdentifier) {
			t.Errorf("CreateTable(%q): %v, want ErrInvalidIdentifier", ident, err)
		}
	}
	if err := c.CreateNamespace(ctx, table.Identifier{"with.dot"}, nil); !errors.Is(err, icecatalog.ErrInvalidIdentifier) {
		t.Errorf("CreateNamespace(with.dot): %v", err)
	}
	if _, err := c.CreateTable(ctx, table.Identifier{"nope", "t"}, testSchema); !errors.Is(err, icecatalog.ErrNoSuchNamespace) {
		t.Errorf("CreateTable in a missing namespace: %v", err)
	}
	page, _ := c.Warehouse().Bucket.List(ctx, "", blob.ListOptions{})
	for _, o := range page.Objects {
		if !strings.HasPrefix(o.Key, "_log/") {
			t.Errorf("bad input wrote %s", o.Key)
		}
	}
	for _, u := range []string{"ftp://host/x", "file://relative/path", "gopher://x"} {
		if _, err := catalog.OpenWarehouse(ctx, u); err == nil {
			t.Errorf("OpenWarehouse(%q) accepted", u)
		}
	}
}

// TestRegistryLogIsTrimmed: the registry is rewritten whole on every
// change, so its log keeps only recent versions.
func TestRegistryLogIsTrimmed(t *testing.T) {
	wh := fileWarehouse(t)
	l := blobLog(t, wh.Bucket)
	c := newCatalog(t, wh, l)
	for i := range 70 {
		if err := c.CreateNamespace(t.Context(), table.Identifier{fmt.Sprintf("ns%d", i)}, nil); err != nil {
			t.Fatal(err)
		}
	}
	es, err := l.Scan(t.Context(), "registry", 0, 1)
	if err != nil || len(es) != 1 {
		t.Fatalf("registry log: %v, %v", es, err)
	}
	if es[0].SeqNo == 0 {
		t.Fatal("the registry log was never trimmed")
	}
	nss, err := c.ListNamespaces(t.Context(), nil)
	if err != nil || len(nss) != 71 {
		t.Fatalf("%d namespaces after trimming (%v), want 71", len(nss), err)
	}
}

// flakyLog fails the next n CompareAndSets with a retryable error that
// wrote nothing, as a serialization failure under SERIALIZABLE does.
type flakyLog struct {
	consensus.Log
	n *atomic.Int32
}

func (f flakyLog) CompareAndSet(ctx context.Context, shard string, expected int64, data []byte) (consensus.Result, error) {
	if f.n.Add(-1) >= 0 {
		return 0, fmt.Errorf("injected: %w", consensus.ErrTransient)
	}
	return f.Log.CompareAndSet(ctx, shard, expected, data)
}

// TestRetryableLogFailure: a commit whose compare-and-set failed without
// writing is a commit conflict (iceberg-go refreshes and retries) and
// leaves no metadata file behind.
func TestRetryableLogFailure(t *testing.T) {
	wh := fileWarehouse(t)
	n := new(atomic.Int32)
	c := newCatalog(t, wh, flakyLog{blobLog(t, wh.Bucket), n})
	tbl := createTable(t, c, "power", nil)
	before := metadataFiles(t, c)
	n.Store(1)
	if _, err := appendRows(t, tbl, "x", 4, nil); !errors.Is(err, table.ErrCommitFailed) || !errors.Is(err, consensus.ErrTransient) {
		t.Fatalf("append through a failing log: %v, want a commit conflict", err)
	}
	if after := metadataFiles(t, c); !slices.Equal(before, after) {
		t.Fatalf("metadata files after a failed commit: %v, before %v", after, before)
	}
	// With retries configured, iceberg-go refreshes and the append lands.
	tx := tbl.NewTransaction()
	if err := tx.SetProperties(iceberg.Properties{table.CommitNumRetriesKey: "3", table.CommitMinRetryWaitMsKey: "1"}); err != nil {
		t.Fatal(err)
	}
	tbl, err := tx.Commit(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	n.Store(2)
	tbl, err = appendRows(t, tbl, "y", 4, nil)
	if err != nil {
		t.Fatalf("append with retries through a failing log: %v", err)
	}
	if got := writers(t, tbl); len(got) != 4 {
		t.Fatalf("rows after the retried append: %v", got)
	}
}

// TestNoOpCommitAppendsNothing: a commit that changes nothing (no update,
// or a property set to the value it has) appends nothing to the table's
// log and writes no metadata file, on every backend, and answers the
// current metadata and its location.
func TestNoOpCommitAppendsNothing(t *testing.T) {
	for _, be := range backends() {
		t.Run(be.name, func(t *testing.T) {
			ctx := t.Context()
			c := be.open(t)
			ident := table.Identifier{"metering", "power"}
			tbl := createTable(t, c, "power", nil)
			tbl, err := appendRows(t, tbl, "w", 10, iceberg.Properties{"meterstore.watermark": "2026-02-01T00:00:00Z"})
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := c.CommitTable(ctx, ident, nil, []table.Update{table.NewSetPropertiesUpdate(iceberg.Properties{"owner": "metering"})}); err != nil {
				t.Fatal(err)
			}
			histBefore, err := c.History(ctx, ident)
			if err != nil {
				t.Fatal(err)
			}
			metaBefore := metadataFiles(t, c)
			cur, err := c.LoadTable(ctx, ident)
			if err != nil {
				t.Fatal(err)
			}
			for _, updates := range [][]table.Update{
				nil,
				{table.NewSetPropertiesUpdate(iceberg.Properties{"owner": "metering"})},
			} {
				md, loc, err := c.CommitTable(ctx, ident, nil, updates)
				if err != nil {
					t.Fatalf("no-op commit %v: %v", updates, err)
				}
				if loc != cur.MetadataLocation() || !md.Equals(cur.Metadata()) {
					t.Fatalf("no-op commit %v answered %s, want the current %s", updates, loc, cur.MetadataLocation())
				}
			}
			hist, err := c.History(ctx, ident)
			if err != nil || len(hist) != len(histBefore) {
				t.Fatalf("history has %d commits after two no-op commits, %d before (%v)", len(hist), len(histBefore), err)
			}
			if after := metadataFiles(t, c); !slices.Equal(metaBefore, after) {
				t.Fatalf("no-op commits wrote metadata files: before %v, after %v", metaBefore, after)
			}
		})
	}
}

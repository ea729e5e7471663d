package catalog_test

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/meterstore/meterstore/catalog"
	"github.com/meterstore/meterstore/internal/hadooptest"
)

// syncBuffer is a log destination that the commits' goroutines may share.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestForeignHadoopCommit plays Spark with a Hadoop catalog on the
// warehouse: it appends a data file and commits v4.metadata.json and the
// hint as HadoopTableOperations does. The fork must be found, logged with
// its file, never overwritten nor hidden by moving the hint past it, and
// no MeterStore commit may be lost; ResolveForks moves it aside and the
// mirror resumes.
func TestForeignHadoopCommit(t *testing.T) {
	for _, be := range []string{"postgres", "serverless"} {
		t.Run(be, func(t *testing.T) {
			wh := fileWarehouse(t)
			l := pgLog(t)
			if be == "serverless" {
				l = blobLog(t, wh.Bucket)
			}
			var logs syncBuffer
			c, err := catalog.New(catalog.Options{Warehouse: wh, Log: l,
				Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.CreateNamespace(t.Context(), table.Identifier{"metering"}, iceberg.Properties{}); err != nil {
				t.Fatal(err)
			}
			ident := table.Identifier{"metering", "power"}
			tbl := createTable(t, c, "power", nil)     // v1
			for _, w := range []string{"ms0", "ms1"} { // v2, v3
				if tbl, err = appendRows(t, tbl, w, 4, nil); err != nil {
					t.Fatal(err)
				}
			}
			if err := c.CheckMirror(t.Context(), ident); err != nil {
				t.Fatalf("a mirror MeterStore alone wrote: %v", err)
			}

			// The foreign writer: a real data file and v4 through iceberg-go.
			dir := filepath.Join(strings.TrimPrefix(wh.Root, "file://"), "metering", "power")
			hw := &hadooptest.Writer{Dir: dir}
			ft, err := hw.LoadTable(t.Context(), ident)
			if err != nil {
				t.Fatal(err)
			}
			if ft, err = appendRows(t, ft, "spark", 3, nil); err != nil {
				t.Fatal(err)
			}
			const v4 = "metering/power/metadata/v4.metadata.json"
			foreign, err := wh.Bucket.Get(t.Context(), v4)
			if err != nil {
				t.Fatal(err)
			}
			if hint := readHint(t, c); hint != "4" {
				t.Fatalf("the foreign writer left the hint at %q", hint)
			}

			fork := wantFork(t, c.CheckMirror(t.Context(), ident), v4)
			if fork.SnapshotID != ft.CurrentSnapshot().SnapshotID || fork.Records != 11 {
				t.Errorf("fork reports snapshot %d with %d records, want %d with 11",
					fork.SnapshotID, fork.Records, ft.CurrentSnapshot().SnapshotID)
			}

			// MeterStore's next commits (its version 4, then 5) go to the log
			// and leave the fork where it is.
			for _, w := range []string{"ms2", "ms3"} {
				if tbl, err = appendRows(t, tbl, w, 4, nil); err != nil {
					t.Fatal(err)
				}
			}
			if got, err := wh.Bucket.Get(t.Context(), v4); err != nil || !bytes.Equal(got, foreign) {
				t.Fatalf("the foreign v4 was overwritten or removed (%v)", err)
			}
			if hint := readHint(t, c); hint != "4" {
				t.Fatalf("the hint was moved to %q over the foreign v4", hint)
			}
			if _, err := os.Stat(hw.MetadataFile(5)); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("v5 was mirrored past the fork: %v", err)
			}
			if !strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), "file="+v4) {
				t.Fatalf("no error log line names %s:\n%s", v4, logs.String())
			}
			// Nothing is lost: MeterStore's log has all of its rows, and a
			// Hadoop reader still finds the foreign one.
			loaded, err := c.LoadTable(t.Context(), ident)
			if err != nil {
				t.Fatal(err)
			}
			if got := distinctWriters(writers(t, loaded)); !slices.Equal(got, []string{"ms0", "ms1", "ms2", "ms3"}) {
				t.Fatalf("MeterStore's table holds writers %v", got)
			}
			ht, err := hw.LoadTable(t.Context(), ident)
			if err != nil {
				t.Fatal(err)
			}
			if got := distinctWriters(writers(t, ht)); !slices.Equal(got, []string{"ms0", "ms1", "spark"}) {
				t.Fatalf("a Hadoop reader sees writers %v", got)
			}
			wantFork(t, c.VerifyMirror(t.Context(), ident), v4)

			// The operator resolves it: the foreign file is kept aside.
			moved, err := c.ResolveForks(t.Context(), ident)
			if err != nil {
				t.Fatal(err)
			}
			if len(moved) != 1 || moved[0].File != v4 {
				t.Fatalf("ResolveForks moved %v, want %s", moved, v4)
			}
			kept, _ := filepath.Glob(filepath.Join(dir, "metadata", catalog.ForkDir, "*-v4.metadata.json"))
			if len(kept) != 1 {
				t.Fatalf("the foreign v4 was not kept aside: %v", kept)
			}
			if got, _ := os.ReadFile(kept[0]); !bytes.Equal(got, foreign) {
				t.Fatal("the file kept aside is not the foreign v4")
			}
			if err := c.VerifyMirror(t.Context(), ident); err != nil {
				t.Fatalf("after ResolveForks: %v", err)
			}
			if hint := readHint(t, c); hint != "5" {
				t.Fatalf("hint %q after ResolveForks, want 5", hint)
			}
			if tbl, err = appendRows(t, tbl, "ms4", 4, nil); err != nil {
				t.Fatal(err)
			}
			if hint := readHint(t, c); hint != "6" {
				t.Fatalf("hint %q after the next commit, want 6: the mirror did not resume", hint)
			}
			assertMirror(t, c, wh.Bucket, 6, tbl.MetadataLocation())
		})
	}
}

// TestForeignHint checks the cheap check's other cases: a hint moved by
// someone else beyond the log, and one pointing at a file that is not
// MeterStore's.
func TestForeignHint(t *testing.T) {
	c := backends()[1].open(t)
	b := c.Warehouse().Bucket
	ident := table.Identifier{"metering", "power"}
	tbl := createTable(t, c, "power", nil)
	if _, err := appendRows(t, tbl, "ms", 4, nil); err != nil {
		t.Fatal(err)
	}
	const hint = "metering/power/metadata/version-hint.text"
	if err := b.Put(t.Context(), hint, []byte("9")); err != nil {
		t.Fatal(err)
	}
	wantFork(t, c.CheckMirror(t.Context(), ident), hint)
	if err := b.Put(t.Context(), hint, []byte("1")); err != nil {
		t.Fatal(err)
	}
	if err := c.CheckMirror(t.Context(), ident); err != nil {
		t.Fatalf("a hint left behind at MeterStore's v1: %v", err)
	}
	const v1 = "metering/power/metadata/v1.metadata.json"
	if err := b.Put(t.Context(), v1, []byte(`{"format-version": 2}`)); err != nil {
		t.Fatal(err)
	}
	wantFork(t, c.CheckMirror(t.Context(), ident), v1)
}

func wantFork(t *testing.T, err error, file string) catalog.Fork {
	t.Helper()
	var fe *catalog.ForkError
	if !errors.As(err, &fe) {
		t.Fatalf("no fork reported (%v), want one naming %s", err, file)
	}
	for _, f := range fe.Forks {
		if f.File == file {
			if !strings.Contains(err.Error(), file) {
				t.Errorf("the error does not name %s: %v", file, err)
			}
			return f
		}
	}
	t.Fatalf("forks %v do not name %s", fe.Forks, file)
	return catalog.Fork{}
}

func readHint(t *testing.T, c *catalog.Catalog) string {
	t.Helper()
	h, err := c.Warehouse().Bucket.Get(t.Context(), "metering/power/metadata/version-hint.text")
	if err != nil {
		t.Fatal(err)
	}
	return string(h)
}

func distinctWriters(ws []string) []string {
	var out []string
	for _, w := range ws {
		p, _, _ := strings.Cut(w, "-")
		out = append(out, p)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

package store

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/meterstore/meterstore/internal/pgtest"
	"github.com/meterstore/meterstore/internal/s3test"
)

// TestRemoteCopiesBounded archives four days to an S3 warehouse, a data
// file each, and queries them one at a time with the copies of remote
// files bounded to a byte: a query copies the files it reads into the
// cache directory and answers from them; two hours later (the copies'
// times moved back), in another process, the next copy made removes the
// idle ones; a copy used within the hour stays past the bound; a removed
// copy is made again when a query needs it.
func TestRemoteCopiesBounded(t *testing.T) {
	ctx := t.Context()
	cfg, err := pgxpool.ParseConfig(pgtest.NewDB(t))
	if err != nil {
		t.Fatal(err)
	}
	e := envAt(t, cfg, s3test.URL(t, s3test.NewBucket(t)), t.TempDir(), LogPostgres)
	cache := t.TempDir()
	s := e.open(t, Options{Query: QueryOptions{CacheDir: cache, CacheBytes: 1}})
	if err := s.CreatePartitions(ctx, dayN(0), dayN(6)); err != nil {
		t.Fatal(err)
	}
	var rows []Reading
	for d := range 4 {
		for slot := range 4 {
			rows = append(rows, qh(d+1, d, slot, "A", 1, int64(1000*(d+1)+slot)))
		}
	}
	mustWrite(t, s, rows)
	if _, err := s.Archive(ctx, "power", dayN(4)); err != nil {
		t.Fatal(err)
	}
	copies := func() []string {
		t.Helper()
		entries, err := os.ReadDir(cache)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, en := range entries {
			if strings.HasSuffix(en.Name(), ".parquet") && !en.IsDir() {
				out = append(out, en.Name())
			}
		}
		return out
	}
	day := func(s *Store, d int) {
		t.Helper()
		sql := `SELECT count(*), CAST(sum(value) * 1000000 AS BIGINT) FROM readings WHERE "from" >= ` + ts(dayN(d)) + ` AND "from" < ` + ts(dayN(d+1))
		row := mustQuery(t, s, sql).Rows[0]
		if row[0] != int64(4) || row[1] != int64(4000*(d+1)+6) {
			t.Fatalf("day %d: %v readings summing to %v", d, row[0], row[1])
		}
	}
	aged := func() {
		t.Helper()
		then := time.Now().Add(-2 * time.Hour)
		for _, c := range copies() {
			if err := os.Chtimes(cache+"/"+c, then, then); err != nil {
				t.Fatal(err)
			}
		}
	}

	day(s, 0)
	first := copies()
	if len(first) == 0 {
		t.Fatal("a query of an S3 warehouse made no copy in the cache directory")
	}
	day(s, 0)
	if got := copies(); len(got) != len(first) {
		t.Fatalf("the same day again: copies %v, before %v", got, first)
	}
	// Two hours later, in another process: it reads the directory.
	aged()
	s = e.open(t, Options{Query: QueryOptions{CacheDir: cache, CacheBytes: 1}})
	day(s, 1)
	got := copies()
	for _, c := range got {
		for _, f := range first {
			if c == f {
				t.Fatalf("copies %v: the idle copy %s stayed past the bound", got, f)
			}
		}
	}
	if len(got) == 0 {
		t.Fatal("the copy of day 1 went")
	}
	// Day 0 again: copied anew; day 1's copy, used within the hour, stays.
	day(s, 0)
	if again := copies(); len(again) != len(got)+len(first) {
		t.Fatalf("copies %v after day 0 again; want day 1's %v and day 0's %v", again, got, first)
	}
}

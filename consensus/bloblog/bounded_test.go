package bloblog

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/meterstore/meterstore/blob"
	"github.com/meterstore/meterstore/consensus/consensustest"
)

// TestAgedShardIsBounded ages a shard by 1,000 commits (300 on the GCS and
// Azure emulators, whose round trips are slow), truncating to a
// tail of 32 as the catalog does: the bucket keeps only the tail's entry
// objects and a couple of markers, and Head lists no more than those, so
// its cost does not depend on how many commits the shard ever had.
func TestAgedShardIsBounded(t *testing.T) {
	const keep = 32
	for name, open := range allBuckets(t) {
		t.Run(name, func(t *testing.T) {
			commits := int64(1000)
			if name == "gcs" || name == "azure" {
				commits = 300 // still 18 truncations
			}
			b := open(t)
			l := newLog(t, b)
			for i := range commits {
				consensustest.Append(t, l, "aged", int64(i)-1, fmt.Sprint("e", i))
				if seq := int64(i); seq >= keep && seq%(keep/2) == 0 {
					if _, err := l.Truncate(t.Context(), "aged", seq-keep+1); err != nil {
						t.Fatal(err)
					}
				}
			}
			entries, markers := countObjects(t, b, l.dir("aged")+"/")
			if entries < keep || entries >= keep+keep/2 || markers > 2 {
				t.Fatalf("the bucket holds %d entries and %d markers of the shard, want %d..%d and at most 2",
					entries, markers, keep, keep+keep/2-1)
			}
			listed := countListed(l)
			e, ok, err := l.Head(t.Context(), "aged")
			if err != nil || !ok || e.SeqNo != commits-1 || string(e.Data) != fmt.Sprint("e", commits-1) {
				t.Fatalf("head = %v %v %v, want entry %d", e, ok, err, commits-1)
			}
			if n := listed.Load(); n > int64(entries+2*markers) {
				t.Fatalf("Head listed %d objects; the shard holds %d entries and %d markers", n, entries, markers)
			}
		})
	}
}

// TestHeadListsFromTheCut leaves the entries below a cut in the bucket, as
// a truncation whose deletions failed does: Head must list from the cut,
// not from the shard's first key, and ignore them.
func TestHeadListsFromTheCut(t *testing.T) {
	const commits, cut = 200, 190
	for name, open := range buckets(t) {
		t.Run(name, func(t *testing.T) {
			b := open(t)
			l := newLog(t, b)
			for i := range commits {
				consensustest.Append(t, l, "s", int64(i)-1, fmt.Sprint("e", i))
			}
			kept := map[string][]byte{}
			for i := range cut {
				data, err := b.Get(t.Context(), l.entryKey("s", int64(i)))
				if err != nil {
					t.Fatal(err)
				}
				kept[l.entryKey("s", int64(i))] = data
			}
			if _, err := l.Truncate(t.Context(), "s", cut); err != nil {
				t.Fatal(err)
			}
			for k, data := range kept { // the deletions "failed"
				if err := b.PutIfAbsent(t.Context(), k, data); err != nil {
					t.Fatal(err)
				}
			}
			listed := countListed(l)
			e, ok, err := l.Head(t.Context(), "s")
			if err != nil || !ok || e.SeqNo != commits-1 {
				t.Fatalf("head = %v %v %v, want entry %d", e, ok, err, commits-1)
			}
			if n := listed.Load(); n > commits-cut+4 {
				t.Fatalf("Head listed %d objects, want at most the %d entries from the cut and the markers", n, commits-cut)
			}
		})
	}
}

// countListed counts the objects l's listings return from now on.
func countListed(l *Log) *atomic.Int64 {
	var n atomic.Int64
	l.listed = func(_ string, objects int) { n.Add(int64(objects)) }
	return &n
}

func countObjects(t *testing.T, b *blob.Bucket, dir string) (entries, markers int) {
	t.Helper()
	opts := blob.ListOptions{}
	for range 1000 {
		page, err := b.List(t.Context(), dir, opts)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Objects {
			switch {
			case strings.HasPrefix(o.Key, dir+"e/"):
				entries++
			case strings.HasPrefix(o.Key, dir+"lo/"):
				markers++
			}
		}
		if page.Next == "" {
			return entries, markers
		}
		opts.StartAfter = page.Next
	}
	t.Fatal("listing did not end")
	return 0, 0
}

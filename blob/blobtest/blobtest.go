// Package blobtest is the conformance suite that every blob driver passes.
// Code that wraps or configures a blob.Bucket can run it too.
package blobtest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/meterstore/meterstore/blob"
)

// LargeSize is the size of the objects in the large-object tests. It exceeds
// the 16 MiB above which the S3 driver switches to a multipart upload, whose
// conditional completion is a separate code path in the store.
const LargeSize = 17 << 20

// Run runs the suite as parallel subtests of t. open must return a new,
// empty bucket each time it is called; Run closes it.
func Run(t *testing.T, open func(t *testing.T) *blob.Bucket) {
	tests := []struct {
		name string
		fn   func(*testing.T, *blob.Bucket)
	}{
		{"GetMissing", testGetMissing},
		{"PutGet", testPutGet},
		{"Exists", testExists},
		{"ListOrder", testListOrder},
		{"ListPrefix", testListPrefix},
		{"ListPaging", testListPaging},
		{"Delete", testDelete},
		{"Overwrite", testOverwrite},
		{"InvalidKeys", testInvalidKeys},
		{"ConcurrentPutIfAbsent", testConcurrentPutIfAbsent},
		{"LargeObject", testLargeObject},
		{"ConcurrentLarge", testConcurrentLarge},
		{"ReadersSeeWholeObjects", testReadersSeeWholeObjects},
	}
	// The cases run in parallel; the parent's cleanup runs after all of
	// them and reports how many passed, so that a run's log says what it
	// checked.
	var mu sync.Mutex
	var ran, passed, failed, skipped int
	t.Cleanup(func() {
		t.Logf("blobtest: %d of %d conformance cases passed (%d ran, %d failed, %d skipped)", passed, len(tests), ran, failed, skipped)
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			t.Cleanup(func() {
				mu.Lock()
				defer mu.Unlock()
				ran++
				switch {
				case t.Failed():
					failed++
				case t.Skipped():
					skipped++
				default:
					passed++
				}
			})
			b := open(t)
			t.Cleanup(func() {
				if err := b.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			tt.fn(t, b)
		})
	}
}

func testGetMissing(t *testing.T, b *blob.Bucket) {
	for _, key := range []string{"missing", "a/b/missing"} {
		if data, err := b.Get(t.Context(), key); !errors.Is(err, blob.ErrNotFound) {
			t.Errorf("Get(%q) = %q, %v; want ErrNotFound", key, data, err)
		}
	}
}

func testPutGet(t *testing.T, b *blob.Bucket) {
	all := make([]byte, 256)
	for i := range all {
		all[i] = byte(i)
	}
	objects := map[string][]byte{
		"plain":                        []byte("hello"),
		"empty":                        {},
		"binary":                       all,
		"deep/er/and/deeper/object":    []byte("deep"),
		"zählerstände/Gastag 06:00":    []byte("unicode and spaces"),
		"shard-1/00000000000000000042": []byte(`{"seq":42}`),
	}
	for key, data := range objects {
		if err := b.PutIfAbsent(t.Context(), key, data); err != nil {
			t.Fatalf("PutIfAbsent(%q): %v", key, err)
		}
	}
	for key, want := range objects {
		got, err := b.Get(t.Context(), key)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("Get(%q) = %q, %v; want %q", key, got, err, want)
		}
	}
}

func testExists(t *testing.T, b *blob.Bucket) {
	ctx := t.Context()
	mustPut(t, b, "k", "first")
	err := b.PutIfAbsent(ctx, "k", []byte("second"))
	if !errors.Is(err, blob.ErrExists) {
		t.Errorf("PutIfAbsent over different data: %v; want ErrExists", err)
	}
	// The same bytes again is what a retry of the first write sends: a
	// cloud driver, which may retry below us, accepts it; a local one,
	// which answers once, may refuse it. Either way nothing changes.
	if err := b.PutIfAbsent(ctx, "k", []byte("first")); err != nil && !errors.Is(err, blob.ErrExists) {
		t.Errorf("PutIfAbsent of the stored bytes: %v; want success or ErrExists", err)
	}
	if got, err := b.Get(ctx, "k"); err != nil || string(got) != "first" {
		t.Errorf("after PutIfAbsent of the stored bytes: Get = %q, %v", got, err)
	}
	// Neither a longer nor a shorter payload counts as the same.
	for _, data := range []string{"first!", "firs", ""} {
		if err := b.PutIfAbsent(ctx, "k", []byte(data)); !errors.Is(err, blob.ErrExists) {
			t.Errorf("PutIfAbsent(%q): %v; want ErrExists", data, err)
		}
	}
	wantData(t, b, "k", "first")
}

// orderKeys sort differently as keys than as file paths: '.' and '-' sort
// before '/', so "a.c" < "a/b", while a directory walk visits "a/" first.
var orderKeys = []string{"b", "a/b", "z/y/x", "a.c", "ab/x", "A", "a-b", "a0", "a/c/d", "a/b0"}

func testListOrder(t *testing.T, b *blob.Bucket) {
	for i, key := range orderKeys {
		mustPut(t, b, key, strings.Repeat("x", i))
	}
	page, err := b.List(t.Context(), "", blob.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := slices.Sorted(slices.Values(orderKeys))
	if got := keys(page.Objects); !slices.Equal(got, want) {
		t.Errorf("List = %q; want %q", got, want)
	}
	if page.Next != "" {
		t.Errorf("Next = %q; want none", page.Next)
	}
	for _, o := range page.Objects {
		if want := int64(slices.Index(orderKeys, o.Key)); o.Size != want {
			t.Errorf("size of %s = %d; want %d", o.Key, o.Size, want)
		}
	}
}

func testListPrefix(t *testing.T, b *blob.Bucket) {
	for _, key := range orderKeys {
		mustPut(t, b, key, key)
	}
	for _, prefix := range []string{"", "a", "a/", "a/b", "a/b0", "a/c", "a/c/", "a/c/d", "ab", "ab/", "z/", "z/y/", "z/y/x", "z/y/x/", "nothing", "/", "a//", "../a"} {
		page, err := b.List(t.Context(), prefix, blob.ListOptions{})
		if err != nil {
			t.Errorf("List(%q): %v", prefix, err)
			continue
		}
		var want []string
		for _, k := range slices.Sorted(slices.Values(orderKeys)) {
			if strings.HasPrefix(k, prefix) {
				want = append(want, k)
			}
		}
		if got := keys(page.Objects); !slices.Equal(got, want) {
			t.Errorf("List(%q) = %q; want %q", prefix, got, want)
		}
	}
}

func testListPaging(t *testing.T, b *blob.Bucket) {
	ctx := t.Context()
	var all []string
	for i := range 23 {
		key := fmt.Sprintf("log/%020d", i)
		all = append(all, key)
		mustPut(t, b, key, key)
	}
	mustPut(t, b, "other/x", "x") // outside the prefix, after it

	var got []string
	opts := blob.ListOptions{Limit: 5}
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("paging does not end")
		}
		page, err := b.List(ctx, "log/", opts)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, keys(page.Objects)...)
		if page.Next == "" {
			if len(page.Objects) != 3 {
				t.Errorf("last page has %d objects; want 3", len(page.Objects))
			}
			break
		}
		if len(page.Objects) != 5 || page.Next != page.Objects[4].Key {
			t.Errorf("page %q, Next %q; want 5 objects, Next the last", keys(page.Objects), page.Next)
		}
		opts.StartAfter = page.Next
	}
	if !slices.Equal(got, all) {
		t.Errorf("pages = %q; want %q", got, all)
	}

	// A page that ends exactly at the end has no Next.
	page, err := b.List(ctx, "log/", blob.ListOptions{Limit: 23})
	if err != nil || len(page.Objects) != 23 || page.Next != "" {
		t.Errorf("List(limit 23) = %d objects, Next %q, %v; want 23, none", len(page.Objects), page.Next, err)
	}

	// StartAfter need not be a stored key: seqno 17 is found from "16x".
	page, err = b.List(ctx, "log/", blob.ListOptions{StartAfter: fmt.Sprintf("log/%020dx", 16), Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := keys(page.Objects), all[17:19]; !slices.Equal(got, want) {
		t.Errorf("List after 16x = %q; want %q", got, want)
	}
	for _, after := range []string{"log/~", "zzz"} {
		page, err = b.List(ctx, "log/", blob.ListOptions{StartAfter: after})
		if err != nil || len(page.Objects) != 0 || page.Next != "" {
			t.Errorf("List after %q = %q, Next %q, %v; want nothing", after, keys(page.Objects), page.Next, err)
		}
	}
	// StartAfter before the prefix lists from its start.
	page, err = b.List(ctx, "log/", blob.ListOptions{StartAfter: "a", Limit: 1})
	if err != nil || !slices.Equal(keys(page.Objects), all[:1]) {
		t.Errorf("List after %q = %q, %v; want %q", "a", keys(page.Objects), err, all[:1])
	}
}

func testDelete(t *testing.T, b *blob.Bucket) {
	ctx := t.Context()
	mustPut(t, b, "keep", "keep")
	mustPut(t, b, "gone", "gone")
	if err := b.Delete(ctx, "gone"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := b.Get(ctx, "gone"); !errors.Is(err, blob.ErrNotFound) {
		t.Errorf("Get after Delete: %v; want ErrNotFound", err)
	}
	if err := b.Delete(ctx, "gone"); err != nil {
		t.Errorf("Delete of a deleted key: %v; want success", err)
	}
	if err := b.Delete(ctx, "never/was"); err != nil {
		t.Errorf("Delete of a missing key: %v; want success", err)
	}
	// A deleted key can be written anew.
	mustPut(t, b, "gone", "back")
	wantData(t, b, "gone", "back")

	// Once the last key below "d/" is gone, "d" itself can be stored.
	mustPut(t, b, "d/e/f", "f")
	if err := b.Delete(ctx, "d/e/f"); err != nil {
		t.Fatal(err)
	}
	mustPut(t, b, "d", "d")
	wantData(t, b, "d", "d")

	page, err := b.List(ctx, "", blob.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := keys(page.Objects), []string{"d", "gone", "keep"}; !slices.Equal(got, want) {
		t.Errorf("List = %q; want %q", got, want)
	}
}

var invalidKeys = []string{
	"", "/a", "a/", "a//b", "..", "../a", "a/../b", "a/..", ".", "a/./b",
	`a\b`, `..\a`, "a\x00b", "a\nb", "\xff", ".tmp-x", "a/.tmp-1234",
	strings.Repeat("k", 1025),
}

func testInvalidKeys(t *testing.T, b *blob.Bucket) {
	ctx := t.Context()
	for _, key := range invalidKeys {
		if err := b.PutIfAbsent(ctx, key, []byte("x")); !errors.Is(err, blob.ErrInvalidKey) {
			t.Errorf("PutIfAbsent(%q): %v; want ErrInvalidKey", key, err)
		}
		if _, err := b.Get(ctx, key); !errors.Is(err, blob.ErrInvalidKey) {
			t.Errorf("Get(%q): %v; want ErrInvalidKey", key, err)
		}
		if err := b.Delete(ctx, key); !errors.Is(err, blob.ErrInvalidKey) {
			t.Errorf("Delete(%q): %v; want ErrInvalidKey", key, err)
		}
	}
	page, err := b.List(ctx, "", blob.ListOptions{})
	if err != nil || len(page.Objects) != 0 {
		t.Errorf("List after invalid puts = %q, %v; want nothing", keys(page.Objects), err)
	}
	// Keys that only resemble invalid ones are fine.
	for _, key := range []string{"a..b", "...", "a/.b", ".tmp", "x/tmp-1", "a.tmp-"} {
		mustPut(t, b, key, key)
		wantData(t, b, key, key)
	}
}

// RaceStats is what RacePutIfAbsent saw.
type RaceStats struct {
	Rounds, Writers int // rounds, and writers in each
	Won, Refused    int // PutIfAbsent calls that succeeded, and that got ErrExists
	// Violations describes each round in which not exactly one writer won
	// or the stored bytes were not the winner's. A correct PutIfAbsent has
	// none.
	Violations []string
}

// RacePutIfAbsent runs rounds races on b: in each, writers goroutines put
// distinct data of about size bytes under one new key (prefix and the
// round's number) at once. It returns an error only if the bucket failed in
// a way that is neither success nor ErrExists, or could not be read back.
// Tests of a driver check that Violations is empty; tests of the test check
// that a broken PutIfAbsent leaves some.
func RacePutIfAbsent(ctx context.Context, b *blob.Bucket, prefix string, rounds, writers, size int) (RaceStats, error) {
	st := RaceStats{Rounds: rounds, Writers: writers}
	for round := range rounds {
		key := fmt.Sprintf("%s%d", prefix, round)
		data := make([][]byte, writers)
		for i := range data {
			// Distinct sizes too, so that no driver can mistake one
			// writer's data for another's.
			data[i] = fmt.Appendf(nil, "round %d writer %d ", round, i)
			data[i] = append(data[i], randomBytes(uint64(round*writers+i), size+i*100)...)
		}
		errs := make([]error, writers)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range data {
			wg.Go(func() {
				<-start
				errs[i] = b.PutIfAbsent(ctx, key, data[i])
			})
		}
		close(start)
		wg.Wait()
		var winners []int
		for i, err := range errs {
			switch {
			case err == nil:
				winners = append(winners, i)
			case errors.Is(err, blob.ErrExists):
				st.Refused++
			default:
				return st, fmt.Errorf("%s: writer %d: %w; want success or ErrExists", key, i, err)
			}
		}
		st.Won += len(winners)
		if len(winners) != 1 {
			st.Violations = append(st.Violations, fmt.Sprintf("%s: writers %v won; want exactly one", key, winners))
			continue
		}
		got, err := b.Get(ctx, key)
		if err != nil {
			return st, fmt.Errorf("%s: reading the winner's object: %w", key, err)
		}
		if !bytes.Equal(got, data[winners[0]]) {
			st.Violations = append(st.Violations, fmt.Sprintf("%s: the stored %d bytes are not those of winner %d", key, len(got), winners[0]))
		}
	}
	return st, nil
}

// race runs RacePutIfAbsent and fails t on anything but exactly one winner
// a round.
func race(t *testing.T, b *blob.Bucket, prefix string, rounds, writers, size int) {
	t.Helper()
	st, err := RacePutIfAbsent(t.Context(), b, prefix, rounds, writers, size)
	for _, v := range st.Violations {
		t.Error(v)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("race: %d rounds of %d writers of %d+ bytes: %d won, %d refused", st.Rounds, st.Writers, size, st.Won, st.Refused)
}

func testConcurrentPutIfAbsent(t *testing.T, b *blob.Bucket) {
	race(t, b, "race/", 8, 16, 32)
}

func testLargeObject(t *testing.T, b *blob.Bucket) {
	ctx := t.Context()
	large := randomBytes(1, LargeSize)
	if err := b.PutIfAbsent(ctx, "large", large); err != nil {
		t.Fatalf("PutIfAbsent(large): %v", err)
	}
	if got, err := b.Get(ctx, "large"); err != nil || !bytes.Equal(got, large) {
		t.Errorf("Get(large): %d bytes, %v; want the %d written", len(got), err, len(large))
	}
	page, err := b.List(ctx, "large", blob.ListOptions{})
	if err != nil || len(page.Objects) != 1 || page.Objects[0].Size != LargeSize {
		t.Errorf("List(large) = %+v, %v; want size %d", page.Objects, err, LargeSize)
	}

	// A large write loses against an existing small object...
	mustPut(t, b, "small", "original")
	if err := b.PutIfAbsent(ctx, "small", randomBytes(2, LargeSize)); !errors.Is(err, blob.ErrExists) {
		t.Errorf("large PutIfAbsent over an existing key: %v; want ErrExists", err)
	}
	wantData(t, b, "small", "original")
	// ...and against an existing large one.
	if err := b.PutIfAbsent(ctx, "large", randomBytes(3, LargeSize)); !errors.Is(err, blob.ErrExists) {
		t.Errorf("large PutIfAbsent over an existing large key: %v; want ErrExists", err)
	}
	if got, err := b.Get(ctx, "large"); err != nil || !bytes.Equal(got, large) {
		t.Errorf("Get(large) after the lost race: %d bytes, %v; want the original", len(got), err)
	}
}

func testConcurrentLarge(t *testing.T, b *blob.Bucket) {
	race(t, b, "large-race/", 1, 4, LargeSize)
}

func testReadersSeeWholeObjects(t *testing.T, b *blob.Bucket) {
	ctx := t.Context()
	data := randomBytes(4, LargeSize)
	failed := make(chan struct{})
	written := make(chan struct{}) // closed once PutIfAbsent has returned
	var wg sync.WaitGroup
	for range 4 {
		// Each reader polls until it has seen the object whole; before
		// that it may see nothing, never a part. Once the put has
		// returned, every store promises that a read begun after it sees
		// the object, so the polling ends.
		wg.Go(func() {
			for {
				var after bool
				select {
				case <-written:
					after = true
				default:
				}
				got, err := b.Get(ctx, "whole")
				switch {
				case errors.Is(err, blob.ErrNotFound) && after:
					t.Errorf("Get after PutIfAbsent returned: %v", err)
					return
				case errors.Is(err, blob.ErrNotFound):
				case err != nil:
					t.Errorf("Get: %v", err)
					return
				case !bytes.Equal(got, data):
					t.Errorf("Get returned %d bytes that are not the object", len(got))
					return
				default:
					return
				}
				select {
				case <-failed:
					return
				case <-time.After(100 * time.Microsecond):
					// Spinning would starve the writer of an in-memory store.
				}
			}
		})
	}
	if err := b.PutIfAbsent(ctx, "whole", data); err != nil {
		t.Error(err)
		close(failed)
	}
	close(written)
	wg.Wait()
}

func randomBytes(seed uint64, n int) []byte {
	p := make([]byte, n)
	var s [32]byte
	binary.LittleEndian.PutUint64(s[:], seed)
	rand.NewChaCha8(s).Read(p)
	return p
}

func mustPut(t *testing.T, b *blob.Bucket, key, data string) {
	t.Helper()
	if err := b.PutIfAbsent(t.Context(), key, []byte(data)); err != nil {
		t.Fatalf("PutIfAbsent(%q): %v", key, err)
	}
}

func wantData(t *testing.T, b *blob.Bucket, key, want string) {
	t.Helper()
	got, err := b.Get(t.Context(), key)
	if err != nil {
		t.Errorf("Get(%q): %v", key, err)
		return
	}
	if string(got) != want {
		if len(got) > 64 || len(want) > 64 {
			t.Errorf("Get(%q): %d bytes differ from the %d expected", key, len(got), len(want))
		} else {
			t.Errorf("Get(%q) = %q; want %q", key, got, want)
		}
	}
}

func keys(objs []blob.Object) []string {
	ks := make([]string, 0, len(objs))
	for _, o := range objs {
		ks = append(ks, o.Key)
	}
	return ks
}

func testOverwrite(t *testing.T, b *blob.Bucket) {
	ctx := t.Context()
	for i, v := range []string{"1", "22", ""} {
		if err := b.Put(ctx, "hint", []byte(v)); err != nil {
			t.Fatalf("Put #%d: %v", i, err)
		}
		if got, err := b.Get(ctx, "hint"); err != nil || string(got) != v {
			t.Fatalf("after Put #%d: Get = %q, %v; want %q", i, got, err, v)
		}
	}
	if err := b.PutIfAbsent(ctx, "hint", []byte("x")); !errors.Is(err, blob.ErrExists) {
		t.Fatalf("PutIfAbsent over a Put object: %v, want ErrExists", err)
	}
	if err := b.Put(ctx, "a/../b", []byte("x")); !errors.Is(err, blob.ErrInvalidKey) {
		t.Fatalf("Put with an invalid key: %v", err)
	}
	page, err := b.List(ctx, "", blob.ListOptions{})
	if err != nil || len(page.Objects) != 1 {
		t.Fatalf("List after overwrites = %v, %v; want one object", page.Objects, err)
	}
}

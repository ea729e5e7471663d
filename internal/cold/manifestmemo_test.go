package cold

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
)

// TestManifestMemoKeysByContent proves a chain with a memo that holds,
// for each of its manifests, a made-up decoding of other bytes: the proof
// decodes the manifests it reads and lists the committed files. Under the
// manifests' own digests the memo's decoding is what the proof takes (the
// made-up one lists no file, which the chain's check refuses): it is used
// for the same bytes only.
func TestManifestMemoKeysByContent(t *testing.T) {
	e := newEnv(t, Options{})
	h := e.ensure(t, loadProfile("power"))
	day := jan2026
	for range 3 {
		next := day.AddDate(0, 0, 1)
		e.archive(t, h, day, next, quarterHours(0, day, 96))
		day = next
	}
	ice, err := e.tier.Iceberg(t.Context(), h)
	if err != nil {
		t.Fatal(err)
	}
	fsys, err := ice.FS(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	snap := ice.CurrentSnapshot()
	want, err := readChain(t.Context(), fsys, "power", ice.Metadata(), snap, nil)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := snap.Manifests(fsys)
	if err != nil || len(ms) < 3 {
		t.Fatalf("%d manifests, %v", len(ms), err)
	}
	paths := func(ch *chain) []string {
		var out []string
		for _, f := range ch.files {
			out = append(out, f.FilePath())
		}
		return out
	}

	var memo manifestMemo
	for _, m := range ms {
		memo.put(memoKey(m, strings.Repeat("0", 64)), []iceberg.DataFile{})
	}
	got, err := readChain(t.Context(), fsys, "power", ice.Metadata(), snap, &memo)
	if err != nil {
		t.Fatalf("proof with a memo of other bytes: %v", err)
	}
	if !slices.Equal(paths(got), paths(want)) || len(got.files) == 0 {
		t.Fatalf("proof with a memo of other bytes lists %v, want %v", paths(got), paths(want))
	}
	// Proved once, the memo holds the decodings: a second proof lists
	// the same.
	if got, err = readChain(t.Context(), fsys, "power", ice.Metadata(), snap, &memo); err != nil || !slices.Equal(paths(got), paths(want)) {
		t.Fatalf("second proof lists %v, %v; want %v", paths(got), err, paths(want))
	}

	var same manifestMemo
	for _, m := range ms {
		same.put(memoKey(m, want.manifests[pathKey(m.FilePath())].SHA256), []iceberg.DataFile{})
	}
	_, err = readChain(t.Context(), fsys, "power", ice.Metadata(), snap, &same)
	if ae := (*AlteredFileError)(nil); !errors.As(err, &ae) {
		t.Fatalf("proof with a memo of the same bytes listing nothing: %v, want the chain refused", err)
	}
}

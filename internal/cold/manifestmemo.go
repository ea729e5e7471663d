package cold

import (
	"container/list"
	"fmt"
	"sync"

	"github.com/apache/iceberg-go"
)

// A manifestMemo keeps the data files of manifests readChain decoded, by
// the manifest's digest and what its manifest list says of it, so that a
// proof of a chain decodes only the manifests it has not seen. The proof
// still reads and hashes every manifest from the store: only bytes equal
// to ones decoded before are not decoded again, and those decode alike.
// An archival's commit proves its table's chain afresh, as does the
// rollup commit it prepares; without the memo each decodes every
// manifest of the table each time, most of them the same as last time.
type manifestMemo struct {
	mu      sync.Mutex
	entries map[string]*list.Element // of *memoized
	lru     list.List                // least recently used first
	files   int                      // data and delete files held
}

type memoized struct {
	key   string
	files []iceberg.DataFile // the manifest's live entries', in its order
}

// manifestMemoFiles bounds the data files a Tier's memo holds: a few
// hundred megabytes at worst, the bounds of every column included.
const manifestMemoFiles = 200_000

// memoKey names what decoding m, of content digest sha, gives: the
// entries inherit snapshot and sequence numbers from m.
func memoKey(m iceberg.ManifestFile, sha string) string {
	first := int64(-1)
	if p := m.FirstRowID(); p != nil {
		first = *p
	}
	return fmt.Sprintf("%s|%s|%d|%d|%d|%d|%d|%d|%d", pathKey(m.FilePath()), sha, m.Version(), m.ManifestContent(),
		m.PartitionSpecID(), m.SnapshotID(), m.SequenceNum(), m.MinSequenceNum(), first)
}

// get returns the files kept under key; a nil memo keeps none.
func (mm *manifestMemo) get(key string) ([]iceberg.DataFile, bool) {
	if mm == nil {
		return nil, false
	}
	mm.mu.Lock()
	defer mm.mu.Unlock()
	e, ok := mm.entries[key]
	if !ok {
		return nil, false
	}
	mm.lru.MoveToBack(e)
	return e.Value.(*memoized).files, true
}

// put keeps files under key, dropping the least recently used manifests
// beyond the bound.
func (mm *manifestMemo) put(key string, files []iceberg.DataFile) {
	if mm == nil || len(files) > manifestMemoFiles {
		return
	}
	mm.mu.Lock()
	defer mm.mu.Unlock()
	if mm.entries == nil {
		mm.entries = map[string]*list.Element{}
	}
	if _, ok := mm.entries[key]; ok {
		return
	}
	mm.entries[key] = mm.lru.PushBack(&memoized{key, files})
	mm.files += len(files)
	for mm.files > manifestMemoFiles {
		old := mm.lru.Remove(mm.lru.Front()).(*memoized)
		delete(mm.entries, old.key)
		mm.files -= len(old.files)
	}
}

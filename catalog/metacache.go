package catalog

import (
	"sync"
	"time"

	"github.com/apache/iceberg-go/table"
)

// metaCacheSize bounds the parsed metadata files a Catalog keeps: a few
// per table. A table's metadata file grows with its snapshots, and every
// read of a table loads its current one.
const metaCacheSize = 32

// metaMaxAge is how long a parsed metadata file is used before it is read
// and checked against its log entry again: how long a long-running process
// may go on answering from a metadata file after it was altered in place
// with its size kept, before it refuses the table.
const metaMaxAge = 5 * time.Minute

// A metaCache keeps parsed metadata files by location, with their size. A
// metadata file is written once and never changed (PutIfAbsent), so what
// was parsed from a location stays right; only the log says which location
// is current. The size guards against a file damaged in place, the age
// (metaMaxAge) against one altered in place with its size kept.
type metaCache struct {
	mu    sync.Mutex
	metas map[string]parsed
	order []string // oldest first
}

type parsed struct {
	size int64
	meta table.Metadata
	at   time.Time // when it was read: the wall clock, for its age only
}

// get returns the metadata parsed from loc when its file had size bytes.
func (m *metaCache) get(loc string, size int64) (table.Metadata, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.metas[loc]
	if !ok || p.size != size || size < 0 || time.Since(p.at) >= metaMaxAge {
		return nil, false
	}
	return p.meta, true
}

func (m *metaCache) put(loc string, size int64, meta table.Metadata) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.metas == nil {
		m.metas = map[string]parsed{}
	}
	if _, ok := m.metas[loc]; !ok {
		m.order = append(m.order, loc)
	}
	m.metas[loc] = parsed{size: size, meta: meta, at: time.Now()}
	if len(m.order) > metaCacheSize {
		delete(m.metas, m.order[0])
		m.order = m.order[1:]
	}
}

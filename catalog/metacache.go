package catalog

import (
	"sync"

	"github.com/apache/iceberg-go/table"
)

// metaCacheSize bounds the parsed metadata files a Catalog keeps: a few
// per table. A table's metadata file grows with its snapshots, and every
// read of a table loads its current one.
const metaCacheSize = 32

// A metaCache keeps parsed metadata files by location. A metadata file is
// written once and never changed (PutIfAbsent), so what was parsed from a
// location stays right; only the log says which location is current.
type metaCache struct {
	mu    sync.Mutex
	metas map[string]table.Metadata
	order []string // oldest first
}

func (m *metaCache) get(loc string) (table.Metadata, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	meta, ok := m.metas[loc]
	return meta, ok
}

func (m *metaCache) put(loc string, meta table.Metadata) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.metas == nil {
		m.metas = map[string]table.Metadata{}
	}
	if _, ok := m.metas[loc]; ok {
		return
	}
	m.metas[loc] = meta
	m.order = append(m.order, loc)
	if len(m.order) > metaCacheSize {
		delete(m.metas, m.order[0])
		m.order = m.order[1:]
	}
}

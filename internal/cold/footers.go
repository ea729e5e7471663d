package cold

import (
	"container/list"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/parquet/metadata"
)

// DefaultFooterCacheBytes bounds a SeriesReader's footer cache when its
// bound is zero: 64 MiB of serialized footers and page indexes, some
// thousands of data files.
const DefaultFooterCacheBytes = 64 << 20

// A footerKey names one version of a local data file: its path, size
// and modification time. Data files are immutable; a file replaced under
// its path is another key, so a stale footer is never used.
type footerKey struct {
	path  string
	size  int64
	mtime time.Time
}

// A footer is what a typed read needs of a data file before any page:
// the parsed file metadata and, per row group as first read, its page
// index and the market location's bloom filter.
type footer struct {
	meta *metadata.FileMetaData

	mu     sync.Mutex
	groups map[int]*groupIndex          // by row group, as read
	blooms map[int]metadata.BloomFilter // by row group, as read; nil: none
	bytes  int64                        // footer, page indexes and filters read
}

// A footerCache keeps footers by file, least recently used first out,
// within a bound on their serialized bytes. It is safe for concurrent
// use.
type footerCache struct {
	max     int64
	observe func(hit bool, files int, bytes int64)

	mu    sync.Mutex
	bytes int64
	lru   *list.List // of *footerEntry, most recent first
	byKey map[footerKey]*list.Element
}

type footerEntry struct {
	key footerKey
	f   *footer
	sz  int64 // as charged to the cache
}

// newFooterCache returns a cache of at most max bytes (zero: the
// default; negative: none kept); observe, if set, is told of every
// lookup and the cache's size after it.
func newFooterCache(max int64, observe func(hit bool, files int, bytes int64)) *footerCache {
	if max == 0 {
		max = DefaultFooterCacheBytes
	}
	return &footerCache{max: max, observe: observe, lru: list.New(), byKey: map[footerKey]*list.Element{}}
}

// get returns the footer of k, or nil.
func (c *footerCache) get(k footerKey) *footer {
	c.mu.Lock()
	e, ok := c.byKey[k]
	var f *footer
	if ok {
		c.lru.MoveToFront(e)
		f = e.Value.(*footerEntry).f
	}
	files, bytes := c.lru.Len(), c.bytes
	c.mu.Unlock()
	if c.observe != nil {
		c.observe(ok, files, bytes)
	}
	return f
}

// put keeps f as the footer of k, or charges it again after it grew (a
// row group's page index read), and evicts the least recently used
// footers beyond the bound.
func (c *footerCache) put(k footerKey, f *footer) {
	f.mu.Lock()
	sz := f.bytes
	f.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.byKey[k]; ok {
		fe := e.Value.(*footerEntry)
		c.bytes += sz - fe.sz
		fe.sz, fe.f = sz, f
		c.lru.MoveToFront(e)
	} else if c.max > 0 {
		c.byKey[k] = c.lru.PushFront(&footerEntry{key: k, f: f, sz: sz})
		c.bytes += sz
	}
	for c.bytes > c.max && c.lru.Len() > 0 {
		last := c.lru.Back()
		fe := last.Value.(*footerEntry)
		c.lru.Remove(last)
		delete(c.byKey, fe.key)
		c.bytes -= fe.sz
	}
}

// size returns the footers kept and their bytes.
func (c *footerCache) size() (files int, bytes int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len(), c.bytes
}

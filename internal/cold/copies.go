package cold

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	icebergio "github.com/apache/iceberg-go/io"
)

// DefaultCopyBytes is the bound of NewCopies when it is given none.
const DefaultCopyBytes = 10 << 30

// MinCopyIdle is the least time a copy stays after its last use,
// whatever the bound: a query reads the copies it planned some time after
// planning them, and DuckDB opens a scan's files one after the other.
const MinCopyIdle = time.Hour

// copyTemp begins the names of copies being written.
const copyTemp = ".copy-"

// copyRescan is how often Copies reads its directory afresh, to learn of
// the copies other processes made, used and removed.
const copyRescan = 10 * time.Minute

// Copies are the local copies of a remote warehouse's data files, which a
// local engine reads by path: kept in one directory, named by a hash of
// their location, bounded in bytes. When a new copy takes them past the
// bound, those used longest ago go, but none used within the idle time,
// so the bound yields to what running queries read. Data files are
// immutable, so a copy never goes stale. Copies is safe for concurrent
// use; processes sharing the directory may remove each other's copies
// only past the idle time too: a use touches the copy's modification
// time, which a removal reads first.
type Copies struct {
	dir      string
	maxBytes int64
	idle     time.Duration
	o        CopyOptions
	now      func() time.Time // time.Now but in tests

	mu      sync.Mutex // orders touches, the index and removals
	known   map[string]copyEntry
	total   int64           // the bytes of known
	scanned time.Time       // when known was read from the directory
	warned  time.Time       // when the bound was last found exceeded
	writing map[string]bool // the temporary files of copies being made
}

// CopyOptions configure Copies.
type CopyOptions struct {
	// Dir holds the copies; empty copies nothing.
	Dir string
	// MaxBytes bounds the copies not used within Idle; zero means
	// DefaultCopyBytes.
	MaxBytes int64
	// Idle is how long a copy stays after its last use whatever the
	// bound, at least MinCopyIdle.
	Idle time.Duration
	// Logger receives the removals; nil means slog.Default().
	Logger *slog.Logger
	// Looked, if set, learns of every lookup of a copy: hit, or copied.
	Looked func(hit bool)
	// Trimmed, if set, learns after each new copy the bytes the copies
	// hold and how many were removed to keep the bound.
	Trimmed func(kept int64, removed int)
}

// NewCopies returns the copies o configures. A nil *Copies, or one
// without a directory, copies nothing: only the files of a local
// warehouse can be read.
func NewCopies(o CopyOptions) *Copies {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultCopyBytes
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Copies{dir: o.Dir, maxBytes: o.MaxBytes, idle: max(o.Idle, MinCopyIdle), o: o, now: time.Now,
		writing: map[string]bool{}}
}

// looked tells o.Looked of a lookup.
func (c *Copies) looked(hit bool) {
	if c.o.Looked != nil {
		c.o.Looked(hit)
	}
}

// Localize returns a local path of the data file at location. A file://
// location or a plain path is returned as a path; any other location is
// copied through fsys, by writing a temporary file and renaming it, unless
// its copy exists already; either way the copy counts as used now.
func (c *Copies) Localize(ctx context.Context, fsys icebergio.IO, location string) (string, error) {
	if path, ok := localPath(location); ok {
		return path, nil
	}
	if c == nil || c.dir == "" {
		return "", fmt.Errorf("cold: copy %s: no cache directory", location)
	}
	sum := sha256.Sum256([]byte(location))
	name := hex.EncodeToString(sum[:]) + ".parquet"
	path := filepath.Join(c.dir, name)
	c.mu.Lock()
	now := c.now()
	err := os.Chtimes(path, now, now)
	if e, ok := c.known[name]; ok && err == nil {
		e.used = now
		c.known[name] = e
	}
	c.mu.Unlock()
	if err == nil {
		c.looked(true)
		return path, nil
	}
	if _, serr := os.Stat(path); serr == nil {
		// Another user's copy, say: read, though not marked used.
		c.looked(true)
		return path, nil
	}
	c.looked(false)
	size, err := c.copyFile(ctx, fsys, location, path)
	if err != nil {
		return "", fmt.Errorf("cold: copy %s: %w", location, err)
	}
	c.trim(name, size)
	return path, nil
}

// A copyEntry is what Copies knows of one copy.
type copyEntry struct {
	size int64
	used time.Time
}

// trim notes the new copy name of size bytes, then removes the copies used
// longest ago while they hold more than the bound, sparing whatever was
// used within the idle time. Every copyRescan it reads the directory
// afresh, and removes the copies left half-written by a process that
// ended.
func (c *Copies) trim(name string, size int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	spare := now.Add(-c.idle)
	os.Chtimes(filepath.Join(c.dir, name), now, now) // as the index has it
	if c.known == nil || now.Sub(c.scanned) >= copyRescan || now.Before(c.scanned) {
		c.scan(now, spare)
	} else {
		c.total -= c.known[name].size
		c.known[name] = copyEntry{size: size, used: now}
		c.total += size
	}
	removed := 0
	defer func() {
		if c.o.Trimmed != nil {
			c.o.Trimmed(c.total, removed)
		}
	}()
	if c.total <= c.maxBytes {
		return
	}
	type named struct {
		name string
		copyEntry
	}
	var old []named
	for n, e := range c.known {
		if e.used.Before(spare) {
			old = append(old, named{n, e})
		}
	}
	slices.SortFunc(old, func(a, b named) int { return a.used.Compare(b.used) })
	var freed int64
	for _, e := range old {
		if c.total <= c.maxBytes {
			break
		}
		p := filepath.Join(c.dir, e.name)
		info, err := os.Stat(p)
		switch {
		case err != nil: // another process removed it
			c.forget(e.name)
			continue
		case !info.ModTime().Before(spare): // another process used it
			c.known[e.name] = copyEntry{size: e.size, used: info.ModTime()}
			continue
		}
		if os.Remove(p) == nil {
			c.forget(e.name)
			removed++
			freed += e.size
		}
	}
	c.o.Logger.Debug("cold: copies of remote data files removed",
		"dir", c.dir, "removed", removed, "freed_bytes", freed, "kept_bytes", c.total, "max_bytes", c.maxBytes)
	if c.total > c.maxBytes && now.Sub(c.warned) >= copyRescan {
		c.warned = now
		c.o.Logger.Warn("cold: the copies of remote data files used within the idle time exceed query.cache_bytes",
			"dir", c.dir, "kept_bytes", c.total, "max_bytes", c.maxBytes, "idle", c.idle)
	}
}

// forget drops name from the index.
func (c *Copies) forget(name string) {
	c.total -= c.known[name].size
	delete(c.known, name)
}

// scan reads the index from the directory, and removes the copies left
// half-written before spare.
func (c *Copies) scan(now, spare time.Time) {
	c.known, c.total, c.scanned = map[string]copyEntry{}, 0, now
	entries, err := os.ReadDir(c.dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		temp := strings.HasPrefix(e.Name(), copyTemp)
		if !temp && !isCopyName(e.Name()) {
			continue // spill directories, the copies of day sums
		}
		info, err := e.Info()
		if err != nil || !info.Mode().IsRegular() {
			continue
		}
		if temp {
			if info.ModTime().Before(spare) && !c.writing[e.Name()] {
				os.Remove(filepath.Join(c.dir, e.Name()))
			}
			continue
		}
		c.known[e.Name()] = copyEntry{size: info.Size(), used: info.ModTime()}
		c.total += info.Size()
	}
}

// isCopyName reports whether name is a copy's: 64 hex digits, .parquet.
func isCopyName(name string) bool {
	h, ok := strings.CutSuffix(name, ".parquet")
	if !ok || len(h) != 2*sha256.Size {
		return false
	}
	_, err := hex.DecodeString(h)
	return err == nil && strings.ToLower(h) == h
}

// copyFile copies location to path, a copy's, through a temporary file,
// synced before the rename, and returns its size. A scan leaves the
// temporary file alone while it is written.
func (c *Copies) copyFile(ctx context.Context, fsys icebergio.IO, location, path string) (n int64, err error) {
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return 0, err
	}
	src, err := fsys.Open(location)
	if err != nil {
		return 0, err
	}
	defer src.Close()
	c.mu.Lock()
	tmp, err := os.CreateTemp(c.dir, copyTemp+"*")
	if err == nil {
		c.writing[filepath.Base(tmp.Name())] = true
	}
	c.mu.Unlock()
	if err != nil {
		return 0, err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
		c.mu.Lock()
		delete(c.writing, filepath.Base(tmp.Name()))
		c.mu.Unlock()
	}()
	if n, err = io.Copy(tmp, ctxReader{ctx, src}); err != nil {
		return 0, err
	}
	if err = tmp.Sync(); err != nil {
		return 0, err
	}
	if err = tmp.Close(); err != nil {
		return 0, err
	}
	return n, os.Rename(tmp.Name(), path)
}

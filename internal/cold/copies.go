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

// Copies are the local copies of a remote warehouse's data files, which a
// local engine reads by path: kept in one directory, named by a hash of
// their location, bounded in bytes. When a new copy takes them past the
// bound, those used longest ago go, but none used within the idle time,
// so the bound yields to what running queries read. Data files are
// immutable, so a copy never goes stale. Copies is safe for concurrent
// use; processes sharing the directory may remove each other's copies
// only past the idle time too.
type Copies struct {
	dir      string
	maxBytes int64
	idle     time.Duration
	o        CopyOptions

	mu sync.Mutex // orders touches and removals
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
	return &Copies{dir: o.Dir, maxBytes: o.MaxBytes, idle: max(o.Idle, MinCopyIdle), o: o}
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
	path := filepath.Join(c.dir, hex.EncodeToString(sum[:])+".parquet")
	now := time.Now()
	c.mu.Lock()
	err := os.Chtimes(path, now, now)
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
	if err := copyFile(ctx, fsys, location, path); err != nil {
		return "", fmt.Errorf("cold: copy %s: %w", location, err)
	}
	c.trim()
	return path, nil
}

// A copyEntry is one file of the directory.
type copyEntry struct {
	name string
	size int64
	used time.Time
}

// trim removes copies used longest ago while the copies hold more than
// the bound, and copies left half-written by a process that ended,
// sparing whatever was used within the idle time.
func (c *Copies) trim() {
	c.mu.Lock()
	defer c.mu.Unlock()
	entries, err := os.ReadDir(c.dir)
	if err != nil {
		return
	}
	var (
		copies []copyEntry
		total  int64
	)
	spare := time.Now().Add(-c.idle)
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
			if info.ModTime().Before(spare) {
				os.Remove(filepath.Join(c.dir, e.Name()))
			}
			continue
		}
		copies = append(copies, copyEntry{e.Name(), info.Size(), info.ModTime()})
		total += info.Size()
	}
	var removed int
	defer func() {
		if c.o.Trimmed != nil {
			c.o.Trimmed(total, removed)
		}
	}()
	if total <= c.maxBytes {
		return
	}
	slices.SortFunc(copies, func(a, b copyEntry) int { return a.used.Compare(b.used) })
	var freed int64
	for _, e := range copies {
		if total <= c.maxBytes || !e.used.Before(spare) {
			break
		}
		if os.Remove(filepath.Join(c.dir, e.name)) == nil {
			total -= e.size
			removed++
			freed += e.size
		}
	}
	level := slog.LevelInfo
	if total > c.maxBytes {
		level = slog.LevelWarn // what queries read within the idle time exceeds the bound
	}
	c.o.Logger.Log(context.Background(), level, "cold: copies of remote data files removed",
		"dir", c.dir, "removed", removed, "freed_bytes", freed, "kept_bytes", total, "max_bytes", c.maxBytes)
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

// copyFile copies location to path through a temporary file in path's
// directory, synced before the rename.
func copyFile(ctx context.Context, fsys icebergio.IO, location, path string) (err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	src, err := fsys.Open(location)
	if err != nil {
		return err
	}
	defer src.Close()
	tmp, err := os.CreateTemp(filepath.Dir(path), copyTemp+"*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err = io.Copy(tmp, ctxReader{ctx, src}); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

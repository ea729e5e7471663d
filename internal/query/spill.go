package query

// Spill directories. A statement that outgrows its memory limit spills
// into a directory of its own in CacheDir, removed when its instance
// closes. A process that dies, most likely killed for its memory while it
// spilled, leaves its directories behind, maybe large: each holds a lock
// file its instance keeps locked, and an engine that starts over the same
// CacheDir removes those no living process holds.

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"
)

const (
	spillPrefix = "spill-"
	spillLock   = ".meterstore-lock"
	// spillYoung spares a directory just made, whose maker may not yet
	// hold its lock.
	spillYoung = time.Minute
	// spillLockless spares a directory without a lock file, made by an
	// earlier release, for this long after it last changed.
	spillLockless = time.Hour
)

// spillInto returns the statement that has d spill into a new directory
// in cacheDir, locked until it is removed on close; with no cacheDir, or
// if d spills already, none.
func (d *duck) spillInto(cacheDir string) (string, error) {
	if cacheDir == "" || d.spill != "" {
		return "", nil
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return "", fmt.Errorf("query: %w", err)
	}
	dir, err := os.MkdirTemp(cacheDir, spillPrefix)
	if err != nil {
		return "", fmt.Errorf("query: %w", err)
	}
	held, err := lockSpill(filepath.Join(dir, spillLock))
	if err != nil {
		os.RemoveAll(dir)
		return "", fmt.Errorf("query: lock the spill directory %s: %w", dir, err)
	}
	d.spill, d.held = dir, held
	return `SET temp_directory = ` + quote(dir), nil
}

// sweepSpills removes the spill directories in cacheDir that no process
// holds, and returns how many it removed.
func sweepSpills(cacheDir string, log *slog.Logger) int {
	entries, err := os.ReadDir(cacheDir)
	if err != nil {
		return 0
	}
	n := 0
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), spillPrefix) {
			continue
		}
		dir := filepath.Join(cacheDir, e.Name())
		info, err := e.Info()
		if err != nil || time.Since(info.ModTime()) < spillYoung || !spillAbandoned(dir, info.ModTime()) {
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			log.Warn("query: removing a spill directory left by a process that ended", "dir", dir, "err", err)
			continue
		}
		n++
	}
	if n > 0 {
		log.Info("query: removed the spill directories of processes that ended", "dir", cacheDir, "removed", n)
	}
	return n
}

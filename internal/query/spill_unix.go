//go:build unix

package query

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// lockSpill creates the lock file at path and locks it, for as long as
// the file returned stays open.
func lockSpill(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// spillAbandoned reports whether no process holds the spill directory
// dir, last changed at changed: its lock file can be locked, or it has
// none and has not changed for spillLockless.
func spillAbandoned(dir string, changed time.Time) bool {
	f, err := os.Open(filepath.Join(dir, spillLock))
	if errors.Is(err, fs.ErrNotExist) {
		return time.Since(changed) >= spillLockless
	}
	if err != nil {
		return false
	}
	defer f.Close() // releases the lock
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
}

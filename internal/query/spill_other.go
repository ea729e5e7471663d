//go:build !unix

package query

import (
	"os"
	"time"
)

// lockSpill creates the lock file at path. Without flock(2) it is not
// locked, and no spill directory is swept.
func lockSpill(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
}

// spillAbandoned reports false: without flock(2) a living process's spill
// directory cannot be told from an abandoned one.
func spillAbandoned(string, time.Time) bool { return false }

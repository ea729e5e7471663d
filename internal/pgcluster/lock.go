package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// lockDir takes the exclusive lock on dir's lock file, waiting up to wait
// (not at all if negative) while another process holds it, and writes the
// caller's pid into the file for the next one's error message. The lock
// is an flock: the kernel releases it when the file is closed or the
// process ends, however it ends, so no stale lock outlives its owner. The
// file is opened close-on-exec, so the server and pg_ctl do not inherit it.
func lockDir(ctx context.Context, dir string, wait time.Duration) (*os.File, error) {
	path := filepath.Join(dir, lockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("pgcluster: lock: %w", err)
	}
	deadline := time.Now().Add(wait)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("pgcluster: lock %s: %w", path, err)
		}
		if !time.Now().Before(deadline) {
			holder := "another process"
			if b, err := os.ReadFile(path); err == nil {
				if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
					holder = "process " + strconv.Itoa(pid)
				}
			}
			f.Close()
			return nil, fmt.Errorf("pgcluster: the private PostgreSQL server in %s is in use by %s (waited %v): %w",
				dir, holder, max(wait, 0), ErrBusy)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("pgcluster: waiting for %s: %w", path, ctx.Err())
		case <-time.After(min(100*time.Millisecond, time.Until(deadline))):
		}
	}
	err = f.Truncate(0)
	if err == nil {
		_, err = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("pgcluster: lock %s: %w", path, err)
	}
	return f, nil
}

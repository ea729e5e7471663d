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

// The files in Options.Dir that coordinate the processes sharing a
// cluster. Both are flocks: the kernel releases them when the file is
// closed or its process ends, however it ends, so no stale lock outlives
// its owner. Go opens files close-on-exec, so the server and pg_ctl do
// not inherit them.
const (
	// lockName is taken exclusively, and briefly, to start, join, leave,
	// stop or take over the server; it holds the pid of its last taker
	// for the next one's error message.
	lockName = "pgcluster.lock"
	// usersName is held shared by every process that uses the server,
	// from Start to Stop. Taking it exclusively, without waiting and
	// while holding lockName, tells that no other process uses it.
	usersName = "pgcluster.users"
)

// lockDir takes the exclusive lock on dir's lock file, waiting up to wait
// (not at all if negative) while another process holds it, and writes the
// caller's pid into the file.
func lockDir(ctx context.Context, dir string, wait time.Duration) (*os.File, error) {
	path := filepath.Join(dir, lockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("pgcluster: lock: %w", err)
	}
	deadline := time.Now().Add(wait)
	for {
		ok, err := tryFlock(f, syscall.LOCK_EX)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("pgcluster: lock %s: %w", path, err)
		}
		if ok {
			break
		}
		if !time.Now().Before(deadline) {
			holder := "another process"
			if b, err := os.ReadFile(path); err == nil {
				if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
					holder = "process " + strconv.Itoa(pid)
				}
			}
			f.Close()
			return nil, fmt.Errorf("pgcluster: the private PostgreSQL server in %s is being started or stopped by %s (waited %v): %w",
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

// openUsers opens dir's users file, unlocked.
func openUsers(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, usersName), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("pgcluster: users: %w", err)
	}
	return f, nil
}

// tryFlock takes (or converts to) the flock how on f without waiting and
// reports whether it got it. On Linux a conversion that fails has dropped
// the lock f held: callers convert only while holding the lock file, or
// when they are about to let go anyway.
func tryFlock(f *os.File, how int) (bool, error) {
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, syscall.EWOULDBLOCK):
			return false, nil
		case errors.Is(err, syscall.EINTR):
			continue
		}
		return false, err
	}
}

package pgcluster

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// takeOver deals with the postmaster.pid a server of the cluster may have
// left. Start holds the lock file, and no other process holds the users
// file, so a server that runs now was left behind by the processes that
// used it and ended without stopping it (killed, or crashed). takeOver stops it
// cleanly rather than adopt it: that server runs with the settings, port,
// log and binaries of the process that is gone and may be half way through
// a start or a shutdown; a fast shutdown ends its sessions, rolls back
// what they had not committed and checkpoints, and the start that follows
// is like any other, at the cost of a few seconds after a crash only.
//
// A postmaster.pid whose process is dead is left to the server, which
// removes it. One whose pid is now a process that is not a server of this
// cluster (the pid was reused, say after a reboot) is removed, because the
// server would refuse to start over it; one that cannot be read is
// removed too.
func (c *Cluster) takeOver(ctx context.Context) error {
	pidFile := filepath.Join(c.dataDir(), "postmaster.pid")
	b, err := os.ReadFile(pidFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if pid < 0 {
		pid = -pid // a single-user server
	}
	if err != nil || pid == 0 {
		c.logger.Warn("removing an unreadable postmaster.pid left by a server that did not finish starting", "file", pidFile)
		return removeFile(pidFile)
	}
	switch c.serverOf(pid) {
	case processGone:
		return nil
	case processOther:
		c.logger.Warn("removing a stale postmaster.pid: its pid is now another process", "file", pidFile, "pid", pid)
		return removeFile(pidFile)
	}
	c.logger.Warn("stopping a PostgreSQL server left running by a process that ended without stopping it",
		"dir", c.dataDir(), "pid", pid)
	if err := c.run(ctx, "pg_ctl", "stop", "-D", c.dataDir(), "-m", "fast", "-w", "-t", "60"); err != nil {
		c.logger.Warn("the left server did not stop in time; stopping it immediately", "err", err)
		if err := c.run(ctx, "pg_ctl", "stop", "-D", c.dataDir(), "-m", "immediate", "-w", "-t", "60"); err != nil {
			return fmt.Errorf("pgcluster: a PostgreSQL server (pid %d) left running in %s by a process that ended does not stop: %w",
				pid, c.dataDir(), err)
		}
	}
	return nil
}

type process int

const (
	processGone  process = iota // no such process
	processOther                // a process, not a server of this cluster
	processOurs                 // a server of this cluster
)

// serverOf tells what process pid is. A server's working directory is its
// data directory; where /proc cannot tell, a live pid is taken for the
// server, as pg_ctl takes it.
func (c *Cluster) serverOf(pid int) process {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return processGone
	}
	cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
	if err != nil {
		if _, err := os.Readlink("/proc/self/cwd"); err != nil {
			return processOurs
		}
		if errors.Is(err, fs.ErrNotExist) {
			return processGone // it ended meanwhile, or is a zombie
		}
		return processOther // another user's: not a server we started
	}
	want, err := filepath.EvalSymlinks(c.dataDir())
	if err != nil {
		want = c.dataDir()
	}
	if cwd == want {
		return processOurs
	}
	return processOther
}

func removeFile(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("pgcluster: %w", err)
	}
	return nil
}

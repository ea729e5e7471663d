package pgcluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// recordName is the file in Options.Dir in which the process that started
// the server says which binaries it runs, so that the processes that join
// it, and the last one that stops it, use the same pg_ctl.
const recordName = "pgcluster.server"

// record is the content of recordName.
type record struct {
	Bin     string `json:"bin"`
	Version string `json:"version"`
	Port    int    `json:"port"`
}

func (c *Cluster) writeRecord() error {
	if c.temp {
		return nil
	}
	b, err := json.Marshal(record{Bin: c.bin, Version: c.version, Port: c.port})
	if err == nil {
		err = writeFileAtomic(filepath.Join(c.dir, recordName), append(b, '\n'))
	}
	if err != nil {
		return fmt.Errorf("pgcluster: %w", err)
	}
	return nil
}

func readRecord(dir string) (record, error) {
	var r record
	b, err := os.ReadFile(filepath.Join(dir, recordName))
	if err != nil {
		return r, err
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("%s: %w", recordName, err)
	}
	return r, nil
}

// join makes c a user of the server the other users of the cluster run.
// Should that server be gone (it crashed, or was stopped by hand), join
// starts it again, on its old port if it is free, so that the others'
// connections find it again.
func (c *Cluster) join(ctx context.Context, settings map[string]string) error {
	r, err := readRecord(c.dir)
	if err == nil {
		c.bin, c.version = r.Bin, r.Version
	} else {
		// Never a reason to stop the others' server: take the binaries
		// this process would start it with.
		c.logger.Warn("the private server's record is unreadable; using the binaries found", "dir", c.dir, "err", err)
		if err := c.pickBinaries(ctx); err != nil {
			return err
		}
	}
	if err := c.placeHome(); err != nil {
		return err
	}
	pid, port, ready := c.postmaster()
	if pid > 0 && ready && c.serverOf(pid) == processOurs {
		c.port, c.joined = port, true
		c.logger.Info("joining the private PostgreSQL server other processes use",
			"dir", c.dataDir(), "port", port, "version", c.version)
		return nil
	}
	c.logger.Warn("the private PostgreSQL server other processes use is not running; starting it again",
		"dir", c.dataDir(), "port", r.Port)
	return c.boot(ctx, settings, r.Port)
}

// postmaster reads the server's postmaster.pid: its pid, its port and
// whether it is ready for connections. A missing or unreadable file gives
// pid 0.
func (c *Cluster) postmaster() (pid, port int, ready bool) {
	b, err := os.ReadFile(filepath.Join(c.dataDir(), "postmaster.pid"))
	if err != nil {
		return 0, 0, false
	}
	lines := strings.Split(string(b), "\n")
	if len(lines) < 4 {
		return 0, 0, false
	}
	pid, _ = strconv.Atoi(strings.TrimSpace(lines[0]))
	port, _ = strconv.Atoi(strings.TrimSpace(lines[3]))
	ready = len(lines) >= 8 && strings.TrimSpace(lines[7]) == "ready"
	return pid, port, ready
}

// portFree reports whether port on 127.0.0.1 can be bound now.
func portFree(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	l.Close()
	return true
}

// writeFileAtomic replaces path with data so that a reader sees the old
// content or the new, never a part.
func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

// InUse reports whether a process uses the cluster in dir now.
func InUse(dir string) (bool, error) {
	f, err := os.OpenFile(filepath.Join(dir, usersName), os.O_RDWR, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("pgcluster: %w", err)
	}
	defer f.Close()
	free, err := tryFlock(f, syscall.LOCK_EX)
	if err != nil {
		return false, fmt.Errorf("pgcluster: %w", err)
	}
	return !free, nil
}

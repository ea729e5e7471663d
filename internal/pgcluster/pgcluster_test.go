package pgcluster

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// The variables that make this test binary a command that starts a cluster
// and is killed while it runs.
const (
	envChild    = "MS_PGCLUSTER_CHILD"     // the cluster's Dir
	envChildRow = "MS_PGCLUSTER_CHILD_ROW" // the value it writes
)

func TestMain(m *testing.M) {
	if dir := os.Getenv(envChild); dir != "" {
		os.Exit(runChild(dir, os.Getenv(envChildRow)))
	}
	os.Exit(m.Run())
}

// runChild starts the cluster in dir, writes row, says "ready" on stdout
// and waits to be killed.
func runChild(dir, row string) int {
	ctx := context.Background()
	c, err := Start(ctx, Options{Dir: dir, Settings: map[string]string{"fsync": "off"}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 2
	}
	if err := exec1(ctx, c, "CREATE TABLE IF NOT EXISTS t (v text); INSERT INTO t VALUES ('"+row+"')"); err != nil {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 2
	}
	fmt.Println("ready")
	time.Sleep(5 * time.Minute) // the parent kills us long before
	return 3
}

// reachableDir returns a new directory the postgres OS user can enter,
// removed when t ends. (t.TempDir is mode 700.)
func reachableDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "pgcluster-test-")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// killServer makes sure no server runs in the cluster at dataDir when t
// ends, whatever the test left behind.
func killServer(t *testing.T, dataDir string) {
	t.Cleanup(func() {
		pid, err := postmasterPID(dataDir)
		if err != nil || pid <= 0 {
			return
		}
		if syscall.Kill(pid, syscall.SIGQUIT) != nil {
			return
		}
		for range 100 {
			if syscall.Kill(pid, 0) != nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		syscall.Kill(pid, syscall.SIGKILL)
	})
}

func postmasterPID(dataDir string) (int, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	return strconv.Atoi(strings.TrimSpace(line))
}

func exec1(ctx context.Context, c *Cluster, sql string) error {
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, sql)
	return err
}

func rows(t *testing.T, c *Cluster) []string {
	t.Helper()
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, c.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rs, err := conn.Query(ctx, "SELECT v FROM t ORDER BY v")
	if err != nil {
		t.Fatal(err)
	}
	vs, err := pgx.CollectRows(rs, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return vs
}

func mustStart(t *testing.T, opts Options) *Cluster {
	t.Helper()
	c, err := Start(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Stop(context.Background()) })
	return c
}

// startChild runs the test binary as a command that starts the cluster in
// dir and writes row, and returns it once it is ready.
func startChild(t *testing.T, dir, row string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envChild+"="+dir, envChildRow+"="+row)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	ready := make(chan bool, 1)
	go func() {
		s := bufio.NewScanner(out)
		ready <- s.Scan() && s.Text() == "ready"
	}()
	select {
	case ok := <-ready:
		if !ok {
			t.Fatal("child: did not get ready")
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("child: not ready after 2 minutes")
	}
	return cmd
}

// TestTakeOverAfterKill kills a command that runs the private server with
// SIGKILL, which leaves the server running, and starts the cluster again
// in the same directory: the leftover server is taken over and the data
// written before the kill is there. Twice, to see the second kill handled
// like the first.
func TestTakeOverAfterKill(t *testing.T) {
	dir := filepath.Join(reachableDir(t), "pg")
	killServer(t, filepath.Join(dir, "data"))
	for _, row := range []string{"a", "b"} {
		child := startChild(t, dir, row)
		if err := child.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		child.Wait()
		pid, err := postmasterPID(filepath.Join(dir, "data"))
		if err != nil || syscall.Kill(pid, 0) != nil {
			t.Fatalf("the killed command's server is not running (pid %d, %v): the test shows nothing", pid, err)
		}
	}
	c := mustStart(t, Options{Dir: dir})
	if got := rows(t, c); strings.Join(got, ",") != "a,b" {
		t.Errorf("rows after the takeover: %q, want a, b", got)
	}
	if err := c.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "data", "postmaster.pid")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("server still running after Stop: %v", err)
	}
}

// TestStalePIDFile starts the cluster again after its server died without
// removing postmaster.pid: once with the dead server's pid in it, and once
// with the pid of a live process that is not a server of the cluster, as
// after a reboot that gave the pid to another process of the postgres
// user.
func TestStalePIDFile(t *testing.T) {
	dir := filepath.Join(reachableDir(t), "pg")
	data := filepath.Join(dir, "data")
	killServer(t, data)
	c := mustStart(t, Options{Dir: dir})
	if err := exec1(t.Context(), c, "CREATE TABLE t (v text); INSERT INTO t VALUES ('a')"); err != nil {
		t.Fatal(err)
	}
	pid, err := postmasterPID(data)
	if err != nil {
		t.Fatal(err)
	}
	// The server dies with SIGKILL, as in an out-of-memory kill; its
	// children follow (they watch the postmaster).
	syscall.Kill(pid, syscall.SIGKILL)
	c.Stop(t.Context()) // fails; releases the directory
	c = mustStart(t, Options{Dir: dir})
	if got := rows(t, c); strings.Join(got, ",") != "a" {
		t.Errorf("rows after a stale postmaster.pid: %q", got)
	}
	if err := exec1(t.Context(), c, "INSERT INTO t VALUES ('b')"); err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}

	// A live process of the postgres user (or of ours, not as root) holds
	// the pid in a leftover postmaster.pid.
	sleep := exec.Command("sleep", "300")
	if os.Geteuid() == 0 {
		cred, err := postgresUser()
		if err != nil {
			t.Fatal(err)
		}
		sleep.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	if err := sleep.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { sleep.Process.Kill(); sleep.Wait() }()
	pidFile := filepath.Join(data, "postmaster.pid")
	stale := fmt.Sprintf("%d\n%s\n1700000000\n5432\n/tmp\n127.0.0.1\n  1234567    12345\nready   \n", sleep.Process.Pid, data)
	if err := os.WriteFile(pidFile, []byte(stale), 0o600); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		cred, _ := postgresUser()
		os.Chown(pidFile, int(cred.Uid), int(cred.Gid))
	}
	c = mustStart(t, Options{Dir: dir})
	if got := rows(t, c); strings.Join(got, ",") != "a,b" {
		t.Errorf("rows after a postmaster.pid of another process: %q", got)
	}
	if syscall.Kill(sleep.Process.Pid, 0) != nil {
		t.Error("the process that held the stale pid was signalled")
	}
}

// TestBusy holds the lock file of a cluster, as a process does while it
// starts or stops the server: Start gives up with ErrBusy after its
// bounded wait, and succeeds when the lock is let go within the wait.
func TestBusy(t *testing.T) {
	dir := filepath.Join(reachableDir(t), "pg")
	killServer(t, filepath.Join(dir, "data"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	held, err := lockDir(t.Context(), dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	begin := time.Now()
	_, err = Start(t.Context(), Options{Dir: dir, LockWait: 500 * time.Millisecond})
	took := time.Since(begin)
	if !errors.Is(err, ErrBusy) {
		t.Fatalf("Start: %v, want ErrBusy", err)
	}
	if took < 500*time.Millisecond {
		t.Errorf("Start gave up after %v, want at least 500ms", took)
	}
	if msg := err.Error(); !strings.Contains(msg, dir) || !strings.Contains(msg, strconv.Itoa(os.Getpid())) ||
		!strings.Contains(msg, "retry") {
		t.Errorf("busy error does not say where, who and what to do: %v", err)
	}
	if _, err := Start(t.Context(), Options{Dir: dir, LockWait: -1}); !errors.Is(err, ErrBusy) {
		t.Fatalf("Start without a wait: %v, want ErrBusy", err)
	}
	go func() {
		time.Sleep(300 * time.Millisecond)
		held.Close()
	}()
	c := mustStart(t, Options{Dir: dir, LockWait: time.Minute})
	if err := exec1(t.Context(), c, "SELECT 1"); err != nil {
		t.Errorf("the cluster started after the wait: %v", err)
	}
}

// TestShared starts the cluster in one directory twice in one process,
// as two commands do: the second joins the server the first started, the
// first's Stop leaves it running for the second, and the second's Stop,
// the last, stops it.
func TestShared(t *testing.T) {
	dir := filepath.Join(reachableDir(t), "pg")
	data := filepath.Join(dir, "data")
	killServer(t, data)
	first := mustStart(t, Options{Dir: dir, LockWait: -1})
	if first.Joined() {
		t.Error("the first Start joined")
	}
	if err := exec1(t.Context(), first, "CREATE TABLE t (v text); INSERT INTO t VALUES ('a')"); err != nil {
		t.Fatal(err)
	}
	second := mustStart(t, Options{Dir: dir, LockWait: -1})
	if !second.Joined() || second.Port() != first.Port() {
		t.Errorf("second Start: joined %v, port %d; want the first's server on %d", second.Joined(), second.Port(), first.Port())
	}
	if second.Version() == "" || second.Version() != first.Version() || second.BinDir() != first.BinDir() {
		t.Errorf("second Start: %q in %s, first %q in %s", second.Version(), second.BinDir(), first.Version(), first.BinDir())
	}
	if err := exec1(t.Context(), second, "INSERT INTO t VALUES ('b')"); err != nil {
		t.Fatal(err)
	}
	if err := first.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := rows(t, second); strings.Join(got, ",") != "a,b" {
		t.Errorf("rows after the first let go: %q", got)
	}
	if err := second.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(data, "postmaster.pid")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("server still running after the last Stop: %v", err)
	}
	if inUse, err := InUse(dir); err != nil || inUse {
		t.Errorf("InUse after the last Stop: %v, %v", inUse, err)
	}
}

// TestSharedKill kills (SIGKILL) one of two commands using a cluster
// while the other runs a query: the query finishes, the server keeps
// running for the survivor, and the survivor's Stop, now the last,
// stops it. A third command started meanwhile joins rather than taking
// the server over.
func TestSharedKill(t *testing.T) {
	dir := filepath.Join(reachableDir(t), "pg")
	data := filepath.Join(dir, "data")
	killServer(t, data)
	child := startChild(t, dir, "a")
	c := mustStart(t, Options{Dir: dir, LockWait: -1})
	if !c.Joined() {
		t.Fatal("Start beside a running command did not join its server")
	}
	if inUse, err := InUse(dir); err != nil || !inUse {
		t.Errorf("InUse while two commands use the cluster: %v, %v", inUse, err)
	}
	conn, err := pgx.Connect(t.Context(), c.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	done := make(chan error, 1)
	go func() {
		var n int
		done <- conn.QueryRow(t.Context(), "SELECT count(*) FROM t, pg_sleep(2)").Scan(&n)
	}()
	time.Sleep(500 * time.Millisecond)
	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	child.Wait()
	if err := <-done; err != nil {
		t.Fatalf("query while the other command was killed: %v", err)
	}
	pid, err := postmasterPID(data)
	if err != nil {
		t.Fatal(err)
	}
	third := mustStart(t, Options{Dir: dir, LockWait: -1})
	if !third.Joined() {
		t.Error("a Start beside the survivor did not join")
	}
	if err := exec1(t.Context(), third, "INSERT INTO t VALUES ('c')"); err != nil {
		t.Fatal(err)
	}
	if err := third.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	if now, err := postmasterPID(data); err != nil || now != pid {
		t.Errorf("the server after the third let go: pid %d, %v; want %d still running", now, err, pid)
	}
	if got := rows(t, c); strings.Join(got, ",") != "a,c" {
		t.Errorf("rows: %q", got)
	}
	if err := c.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(data, "postmaster.pid")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("server still running after the survivor's Stop: %v", err)
	}
}

// TestPrivateDirectory runs as root in a directory the postgres OS user
// cannot enter (mode 700, like /root): the cluster's data is kept where
// the postgres user can reach it, found again by the next Start, and the
// data persists. When the directory is removed and made again, the old
// cluster is moved aside and a new one made.
func TestPrivateDirectory(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root runs the server as another user")
	}
	private := filepath.Join(reachableDir(t), "root")
	if err := os.Mkdir(private, 0o700); err != nil {
		t.Fatal(err)
	}
	relocateRoot = filepath.Join(reachableDir(t), "var-lib-meterstore")
	t.Cleanup(func() { relocateRoot = defaultRelocateRoot })
	dir := filepath.Join(private, "deployment", "pg")
	killServer(t, filepath.Join(dir, "data"))

	c := mustStart(t, Options{Dir: dir})
	if err := exec1(t.Context(), c, "CREATE TABLE t (v text); INSERT INTO t VALUES ('a')"); err != nil {
		t.Fatal(err)
	}
	if err := c.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	target, err := os.Readlink(filepath.Join(dir, "data"))
	if err != nil || !strings.HasPrefix(target, relocateRoot+"/") {
		t.Fatalf("%s/data: %q, %v; want a link into %s", dir, target, err, relocateRoot)
	}
	c = mustStart(t, Options{Dir: dir})
	if got := rows(t, c); strings.Join(got, ",") != "a" {
		t.Errorf("rows in the second run: %q", got)
	}
	if err := c.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}

	// The data directory is removed and made again at the same path, as a
	// later demo does: the old cluster is not brought back, nor deleted,
	// but moved aside.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	c = mustStart(t, Options{Dir: dir})
	if err := exec1(t.Context(), c, "SELECT 1 FROM t"); err == nil {
		t.Error("the cluster of the removed data directory came back")
	}
	aside, _ := filepath.Glob(filepath.Dir(target) + ".removed-*/data/PG_VERSION")
	if len(aside) != 1 {
		t.Errorf("the cluster of the removed data directory was not moved aside: %v", aside)
	}
}

// TestUnreachableCluster moves an existing cluster where the postgres OS
// user cannot reach it: Start says which directory to open up.
func TestUnreachableCluster(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("only root runs the server as another user")
	}
	parent := reachableDir(t)
	dir := filepath.Join(parent, "pg")
	killServer(t, filepath.Join(dir, "data"))
	c := mustStart(t, Options{Dir: dir})
	if err := c.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(parent, 0o700); err != nil {
		t.Fatal(err)
	}
	_, err := Start(t.Context(), Options{Dir: dir})
	if err == nil || !strings.Contains(err.Error(), "chmod o+x "+parent) {
		t.Errorf("Start of an unreachable cluster: %v", err)
	}
}

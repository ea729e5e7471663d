package pgcluster

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

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

// TestBusy holds the cluster in a directory and starts it there again: the
// second Start gives up with ErrBusy after its bounded wait, and succeeds
// when the first lets go within the wait.
func TestBusy(t *testing.T) {
	dir := filepath.Join(reachableDir(t), "pg")
	killServer(t, filepath.Join(dir, "data"))
	first := mustStart(t, Options{Dir: dir})
	if err := exec1(t.Context(), first, "CREATE TABLE t (v text); INSERT INTO t VALUES ('a')"); err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	_, err := Start(t.Context(), Options{Dir: dir, LockWait: 500 * time.Millisecond})
	took := time.Since(begin)
	if !errors.Is(err, ErrBusy) {
		t.Fatalf("second Start: %v, want ErrBusy", err)
	}
	if took < 500*time.Millisecond || took > 5*time.Second {
		t.Errorf("second Start gave up after %v, want about 500ms", took)
	}
	if msg := err.Error(); !strings.Contains(msg, dir) || !strings.Contains(msg, strconv.Itoa(os.Getpid())) ||
		!strings.Contains(msg, "retry") {
		t.Errorf("busy error does not say where, who and what to do: %v", err)
	}
	if err := exec1(t.Context(), first, "INSERT INTO t VALUES ('b')"); err != nil {
		t.Errorf("the first cluster after a busy Start: %v", err)
	}

	// Without waiting at all.
	if _, err := Start(t.Context(), Options{Dir: dir, LockWait: -1}); !errors.Is(err, ErrBusy) {
		t.Fatalf("Start without a wait: %v, want ErrBusy", err)
	}

	// The first lets go while the second waits.
	go func() {
		time.Sleep(300 * time.Millisecond)
		first.Stop(context.Background())
	}()
	second := mustStart(t, Options{Dir: dir, LockWait: time.Minute})
	if got := rows(t, second); strings.Join(got, ",") != "a,b" {
		t.Errorf("rows in the second cluster: %q", got)
	}
}

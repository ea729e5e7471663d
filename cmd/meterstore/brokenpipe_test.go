package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestQueryIntoClosedPipe runs meterstore query | head -2 on a deployment
// with a private PostgreSQL: the reader closes the pipe after two lines,
// and the command, the server's only user, stops it before it exits
// (it died of SIGPIPE and left the server running until the next command
// took it over), quietly, with 128+13 as a process killed by SIGPIPE;
// the next command starts the server afresh, with nothing to take over.
func TestQueryIntoClosedPipe(t *testing.T) {
	cfgPath, dir := privateDeployment(t)
	bin := buildBinary(t, t.TempDir())
	pidFile := filepath.Join(dir, "pg", "data", "postmaster.pid")
	t.Cleanup(func() {
		// A server the command left: the next command, the last user,
		// takes it over and stops it.
		if _, err := os.Stat(pidFile); err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			out, err := exec.CommandContext(ctx, bin, "status", "-c", cfgPath).CombinedOutput()
			t.Logf("status, to stop the server left running: %v\n%s", err, out)
		}
	})
	if out, code := runBin(t, bin, "create", "-c", cfgPath); code != 0 {
		t.Fatalf("create: exit %d\n%s", code, out)
	}
	// Far more than a pipe's buffer, so that writing it meets the closed
	// pipe.
	cmd := exec.CommandContext(t.Context(), bin, "query", "-c", cfgPath, "--format", "csv", "SELECT range AS n FROM range(300000)")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(stdout)
	for i := range 2 {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("line %d: %q, %v\n%s", i+1, line, err, stderr.String())
		}
	}
	stdout.Close() // as head does after two lines
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("query: %v, want it to end with status 141\n%s", err, stderr.String())
	}
	ws := ee.Sys().(syscall.WaitStatus)
	if ws.Signaled() || ws.ExitStatus() != 141 {
		t.Errorf("query ended with %v (signal %v), want exit 141\n%s", err, ws.Signal(), stderr.String())
	}
	if strings.Contains(stderr.String(), "broken pipe") {
		t.Errorf("query reported the closed pipe as an error:\n%s", stderr.String())
	}
	if _, err := os.Stat(pidFile); !errors.Is(err, os.ErrNotExist) {
		b, _ := os.ReadFile(pidFile)
		t.Fatalf("the private server runs after query, its only user, ended: %v\n%s", err, b)
	}
	out, code := runBin(t, bin, "status", "-c", cfgPath, "-v")
	if code != 0 || strings.Contains(out, "left running") {
		t.Errorf("status after: exit %d\n%s", code, out)
	}
}

package main

import (
	"bufio"
	"errors"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A serveProc is a running meterstore serve started by a test.
type serveProc struct {
	t    *testing.T
	cmd  *exec.Cmd
	base string // http://127.0.0.1:<port>
	// stderr is the process's log.
	stderr *lockedBuffer
	// exited is closed when the process has exited, with waitErr set.
	exited  chan struct{}
	waitErr error
}

// startServe runs bin serve -c cfgPath with args and waits, within a
// bounded time, for the address it prints. A process still running when
// the test ends is killed.
func startServe(t *testing.T, bin, cfgPath string, args ...string) *serveProc {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve", "-c", cfgPath}, args...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &serveProc{t: t, cmd: cmd, stderr: &lockedBuffer{}, exited: make(chan struct{})}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			// Only the first line is wanted; the rest is drained so
			// that the process never blocks on a full pipe.
			select {
			case lines <- sc.Text():
			default:
			}
		}
		close(lines)
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			cmd.Process.Kill()
			<-p.exited
		}
	})

	deadline := time.After(2 * time.Minute)
	for p.base == "" {
		select {
		case l, ok := <-lines:
			if !ok {
				<-p.exited
				t.Fatalf("serve exited before serving: %v\n%s", p.waitErr, p.stderr.String())
			}
			if addr, found := strings.CutPrefix(l, "serving "); found {
				p.base = addr
			}
		case <-deadline:
			t.Fatalf("serve did not say where it serves within 2 minutes\n%s", p.stderr.String())
		}
	}
	if !strings.HasPrefix(p.base, "http://127.0.0.1:") || strings.HasSuffix(p.base, ":0") {
		t.Fatalf("serving %q", p.base)
	}
	return p
}

// wait waits up to limit for the process to exit and returns its exit
// status; it fails the test if the process is still running then.
func (p *serveProc) wait(limit time.Duration) int {
	p.t.Helper()
	select {
	case <-p.exited:
	case <-time.After(limit):
		p.t.Fatalf("serve did not exit within %v\n%s", limit, p.stderr.String())
	}
	var ee *exec.ExitError
	switch {
	case p.waitErr == nil:
		return 0
	case errors.As(p.waitErr, &ee):
		return ee.ExitCode()
	}
	p.t.Fatalf("serve: %v", p.waitErr)
	return -1
}

// terminate sends SIGTERM and returns the exit status, waiting up to
// limit for it.
func (p *serveProc) terminate(limit time.Duration) int {
	p.t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		p.t.Fatal(err)
	}
	return p.wait(limit)
}

// kill ends the process with SIGKILL and waits for it.
func (p *serveProc) kill() {
	p.t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		p.t.Fatal(err)
	}
	<-p.exited
}

// waitLog polls the log until it holds substr, for at most limit.
func (p *serveProc) waitLog(substr string, limit time.Duration) {
	p.t.Helper()
	p.waitLogCount(substr, 1, limit)
}

// waitLogCount polls the log until it holds substr n times, for at most
// limit.
func (p *serveProc) waitLogCount(substr string, n int, limit time.Duration) {
	p.t.Helper()
	deadline := time.Now().Add(limit)
	for strings.Count(p.stderr.String(), substr) < n {
		select {
		case <-p.exited:
			p.t.Fatalf("serve exited before logging %q: %v\n%s", substr, p.waitErr, p.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("serve did not log %q within %v\n%s", substr, limit, p.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

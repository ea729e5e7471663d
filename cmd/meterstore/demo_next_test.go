package main

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// splitCommand splits a printed command line into its words as a POSIX
// shell does for the quoting the demo uses: '...' and "..." without
// escapes inside.
func splitCommand(t *testing.T, line string) []string {
	t.Helper()
	var (
		words []string
		cur   strings.Builder
		quote rune
		in    bool
	)
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ':
			if in {
				words = append(words, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if quote != 0 {
		t.Fatalf("unbalanced quote in %q", line)
	}
	if in {
		words = append(words, cur.String())
	}
	return words
}

// TestDemoNextCommands runs the smallest demo on a private PostgreSQL and
// then the three commands it prints to try next, as printed: the query
// (go run ./cmd/meterstore is the built binary here), serve with the
// demo's token asked by curl, and PyIceberg reading the cold tier.
func TestDemoNextCommands(t *testing.T) {
	dir, err := os.MkdirTemp("", "meterstore-demo-next-") // the postgres OS user can enter it
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	listen := l.Addr().String()
	l.Close()
	demoDir := filepath.Join(dir, "demo")
	out := mustRun(t, "demo", "--dir", demoDir, "--meters", "4", "--days", "20", "--listen", listen)
	_, next, ok := strings.Cut(out, "Try next")
	if !ok {
		t.Fatalf("the demo prints nothing to try next:\n%s", out)
	}
	var commands [][]string
	for _, line := range strings.Split(next, "\n") {
		if strings.HasPrefix(line, "  ") {
			commands = append(commands, splitCommand(t, strings.TrimSpace(line)))
		}
	}
	if len(commands) != 4 {
		t.Fatalf("want 4 command lines (query, serve, curl, python3):\n%s", next)
	}
	cfgPath := filepath.Join(demoDir, "meterstore.toml")
	for i, prefix := range []string{"go run ./cmd/meterstore query", "go run ./cmd/meterstore serve", "curl", "python3 -c"} {
		if !strings.HasPrefix(strings.Join(commands[i], " "), prefix) {
			t.Fatalf("command %d: %q, want it to begin with %q", i+1, commands[i], prefix)
		}
	}

	// 1. The query, in this process: a row per power meter.
	q, code := run(t, commands[0][3:]...)
	if lines := strings.Split(strings.TrimSpace(q), "\n"); code != 0 || len(lines) != 5 || !strings.HasPrefix(lines[0], "malo_id") {
		t.Errorf("%q: exit %d\n%s", commands[0], code, q)
	}

	// 2. serve as printed, then curl as printed.
	if want := []string{"serve", "-c", cfgPath}; !slices.Equal(commands[1][3:], want) {
		t.Fatalf("serve command %q, want %q", commands[1][3:], want)
	}
	bin := buildBinary(t, t.TempDir())
	p := startServe(t, bin, cfgPath)
	if p.base != "http://"+listen {
		t.Errorf("serve listens on %s, the demo printed %s", p.base, listen)
	}
	status, err := exec.CommandContext(t.Context(), commands[2][0], commands[2][1:]...).CombinedOutput()
	if err != nil || !strings.Contains(string(status), `"table": "power"`) && !strings.Contains(string(status), `"table":"power"`) {
		t.Errorf("%q: %v\n%s", commands[2], err, status)
	}
	if code := p.terminate(2 * time.Minute); code != 0 {
		t.Errorf("serve: exit %d\n%s", code, p.stderr.String())
	}

	// 3. PyIceberg, without MeterStore.
	py, err := exec.CommandContext(t.Context(), commands[3][0], commands[3][1:]...).CombinedOutput()
	n, convErr := strconv.Atoi(strings.TrimSpace(string(py)))
	if err != nil || convErr != nil || n <= 0 {
		t.Errorf("%q: %v\n%s", commands[3], err, py)
	}
	t.Logf("PyIceberg read %d rows of the cold tier", n)
}

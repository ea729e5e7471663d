package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meterstore/meterstore/store"
)

// endless is a standard input that never ends, as /dev/zero or a pipe
// from yes: it counts the bytes read and fails past limit, so that an
// unbounded read shows as an error rather than as all the memory there is.
type endless struct{ read, limit int }

var errEndless = errors.New("read past the limit of the test")

func (e *endless) Read(p []byte) (int, error) {
	if e.read >= e.limit {
		return 0, errEndless
	}
	n := min(len(p), e.limit-e.read)
	for i := range n {
		p[i] = ' '
	}
	e.read += n
	return n, nil
}

// TestQueryStatementBound: a statement in a file or on standard input
// larger than store.MaxStatementBytes is refused, exit 1, naming the
// bound, having read at most one byte past it, before any deployment is
// opened; one of the bound is read whole.
func TestQueryStatementBound(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "missing.toml") // nothing is opened
	big := filepath.Join(dir, "big.sql")
	if err := os.WriteFile(big, []byte("SELECT 1"+strings.Repeat(" ", 2*store.MaxStatementBytes)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"query", "explain"} {
		for _, arg := range []string{"@" + big, "@/dev/zero", "-", "SELECT 1" + strings.Repeat(" ", store.MaxStatementBytes)} {
			root := newRoot()
			var out bytes.Buffer
			in := &endless{limit: 8 * store.MaxStatementBytes}
			root.SetIn(in)
			root.SetOut(&out)
			root.SetErr(&out)
			root.SetArgs([]string{cmd, "-c", missing, "--table", "power", arg})
			err := root.ExecuteContext(t.Context())
			if exitCode(err) != exitPermanent || err == nil || !strings.Contains(err.Error(), "at most 1048576 bytes (1 MiB)") {
				t.Errorf("%s %.20s: exit %d, %v; want 1 naming the bound", cmd, arg, exitCode(err), err)
			}
			if in.read > store.MaxStatementBytes+1 {
				t.Errorf("%s %.20s: read %d bytes of standard input, more than one past the bound", cmd, arg, in.read)
			}
		}
	}
	// At the bound, the statement is read whole: the command gets as far
	// as the missing configuration.
	atBound := filepath.Join(dir, "at.sql")
	if err := os.WriteFile(atBound, []byte("SELECT 1"+strings.Repeat(" ", store.MaxStatementBytes-8)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, code := run(t, "query", "-c", missing, "@"+atBound); code != exitPermanent || strings.Contains(out, "1 MiB") || !strings.Contains(out, "missing.toml") {
		t.Errorf("a statement of the bound: exit %d\n%s", code, out)
	}
}

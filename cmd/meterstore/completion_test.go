package main

import (
	"strings"
	"testing"
)

// TestCompletionShells: meterstore completion writes the script of a
// shell it knows and exits 0; an unknown shell (tcsh printed the help and
// exited 0) or none is an error, exit 1, naming the shells it knows.
func TestCompletionShells(t *testing.T) {
	for _, sh := range []string{"bash", "zsh", "fish", "powershell"} {
		if out, code := run(t, "completion", sh); code != 0 || !strings.Contains(out, "meterstore") {
			t.Errorf("completion %s: exit %d\n%.200s", sh, code, out)
		}
	}
	for _, args := range [][]string{{"completion", "tcsh"}, {"completion"}} {
		out, code := run(t, args...)
		if code != 1 || !strings.Contains(out, "bash, zsh, fish, powershell") || strings.Contains(out, "Usage:") {
			t.Errorf("%s: exit %d, want 1 naming the shells:\n%.400s", strings.Join(args, " "), code, out)
		}
	}
	if out, code := run(t, "completion", "tcsh"); !strings.Contains(out, `unknown shell "tcsh"`) {
		t.Errorf("completion tcsh: exit %d\n%s", code, out)
	}
}

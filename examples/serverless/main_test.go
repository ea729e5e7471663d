package main

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
)

// TestExample builds and runs the example: one writer commits, the other
// loses with the commit-failed error, and the scan shows only the winner.
func TestExample(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "serverless")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	out, err := exec.CommandContext(t.Context(), bin, "-dir", t.TempDir()).CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatal(err)
	}
	for _, re := range []string{
		`(?m)^writer [AB] committed$`,
		`(?m)^writer [AB] lost the race: .*commit failed`,
		`(?m)^scan: 4 rows`,
		`(?m)^commit log: 2 entries`,
	} {
		if !regexp.MustCompile(re).Match(out) {
			t.Errorf("output lacks %s", re)
		}
	}
	won := regexp.MustCompile(`(?m)^writer ([AB]) committed$`).FindSubmatch(out)
	if won != nil && len(regexp.MustCompile(`by `+string(won[1])+`\n`).FindAll(out, -1)) != 4 {
		t.Errorf("scan rows are not all the winner's")
	}
}

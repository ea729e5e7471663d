package consensustest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/anishathalye/porcupine"
)

// Visualize writes porcupine's HTML view of a failed check next to the test
// output and logs its path, so a violation can be read, not just counted.
func Visualize(t testing.TB, info porcupine.LinearizationInfo) {
	t.Helper()
	dir := os.Getenv("MS_TEST_ARTIFACTS")
	if dir == "" {
		dir = os.TempDir()
	}
	f, err := os.CreateTemp(dir, filepath.Base(t.Name())+"-*.html")
	if err != nil {
		t.Logf("visualize: %v", err)
		return
	}
	defer f.Close()
	if err := porcupine.Visualize(Model(), info, f); err != nil {
		t.Logf("visualize: %v", err)
		return
	}
	t.Logf("linearizability view: %s", f.Name())
}

package cold

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meterstore/meterstore/series"
)

// TestUnreachableFileInTheWay: a file where the warehouse has a directory
// makes the cold tier unreachable, whichever error mkdir gives for it; a
// file that exists where a new one is created exclusively does not, nor
// does an error the tier classified itself. An object read cut short
// or an object store request failed in transport
// (TestServeNetworkFaults' S3 faults answered 500 for them) are
// unreachable too, unless the file was found altered.
func TestUnreachableFileInTheWay(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "warehouse")
	if err := os.WriteFile(file, []byte("away"), 0o600); err != nil {
		t.Fatal(err)
	}
	mkdirExists := os.Mkdir(file, 0o755)                                  // EEXIST
	mkdirUnder := os.MkdirAll(filepath.Join(file, "ns"), 0o755)           // ENOTDIR
	_, createExcl := os.OpenFile(file, os.O_CREATE|os.O_EXCL, 0o600)      // EEXIST, not mkdir
	_, cutShort := io.ReadFull(strings.NewReader("PAR"), make([]byte, 8)) // a body that ends early
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"mkdir over a file", fmt.Errorf("write data files: %w", mkdirExists), true},
		{"mkdir under a file", mkdirUnder, true},
		{"exclusive create of an existing file", createExcl, false},
		{"a refusal of the tier", &series.Error{Kind: series.InvalidInput, Err: mkdirExists}, false},
		{"an object read cut short", fmt.Errorf("read manifest: blob (key %q) (code=Unknown): %w", "m1.avro", cutShort), true},
		{"an object store request failed in transport", fmt.Errorf("open metadata.json: operation error S3: GetObject, exceeded maximum number of attempts, 3, request send failed: %w",
			&url.Error{Op: "Get", URL: "http://127.0.0.1:1/b/k", Err: io.EOF}), true},
		{"a file found altered", fmt.Errorf("%w: %w", &AlteredFileError{Table: "power", File: "m1.avro", Reason: "size"}, cutShort), false},
		{"another error", errors.New("boom"), false},
	} {
		if c.err == nil {
			t.Fatalf("%s: no error to classify", c.name)
		}
		if got := Unreachable(c.err); got != c.want {
			t.Errorf("%s (%v): unreachable = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}

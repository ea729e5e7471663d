package blob_test

import (
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/meterstore/meterstore/blob"
	"github.com/meterstore/meterstore/blob/blobtest"
)

func TestMem(t *testing.T) {
	blobtest.Run(t, func(t *testing.T) *blob.Bucket { return mustOpen(t, "mem://") })
}

func TestLocal(t *testing.T) {
	blobtest.Run(t, func(t *testing.T) *blob.Bucket { return mustOpen(t, fileURL(t.TempDir())) })
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, u := range []string{
		"ftp://host/dir",
		"bucket",
		"file:relative/dir",
		"file://otherhost/dir",
		fileURL(dir) + "?create_dir=true",
		fileURL(filepath.Join(dir, "missing")),
		fileURL(file),
		"s3://bucket?no_such_parameter=1",
		"%zz",
	} {
		b, err := blob.Open(t.Context(), u)
		if err == nil {
			b.Close()
			t.Errorf("Open(%q) succeeded; want an error", u)
			continue
		}
		if !strings.HasPrefix(err.Error(), "blob: open") {
			t.Errorf("Open(%q): %v; want a blob: open error", u, err)
		}
	}
}

func mustOpen(t *testing.T, rawURL string) *blob.Bucket {
	t.Helper()
	b, err := blob.Open(t.Context(), rawURL)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func fileURL(dir string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(dir)}).String()
}

func TestErrorsCarryKey(t *testing.T) {
	b := mustOpen(t, "mem://")
	defer b.Close()
	_, err := b.Get(t.Context(), "some/key")
	if !errors.Is(err, blob.ErrNotFound) || err.Error() != "blob: get some/key: object not found" {
		t.Errorf("Get: %v", err)
	}
	err = b.PutIfAbsent(t.Context(), "a//b", nil)
	if !errors.Is(err, blob.ErrInvalidKey) || !strings.Contains(err.Error(), `"a//b"`) {
		t.Errorf("PutIfAbsent: %v", err)
	}
}

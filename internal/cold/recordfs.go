package cold

import (
	"errors"
	iofs "io/fs"
	"sync"

	icebergio "github.com/apache/iceberg-go/io"
)

// A recordingFS passes everything through to a table's file IO and
// remembers every file it was asked to create: data files, manifests and
// manifest lists alike. It is how a commit that did not land knows, without
// listing the warehouse, every file it has to delete.
type recordingFS struct {
	icebergio.WriteFileIO

	mu    sync.Mutex
	paths []string
}

func (r *recordingFS) note(name string) {
	r.mu.Lock()
	r.paths = append(r.paths, name)
	r.mu.Unlock()
}

// Create implements icebergio.WriteFileIO. The path is noted first, so a
// file that fails halfway is deleted too.
func (r *recordingFS) Create(name string) (icebergio.FileWriter, error) {
	r.note(name)
	return r.WriteFileIO.Create(name)
}

// WriteFile implements icebergio.WriteFileIO.
func (r *recordingFS) WriteFile(name string, p []byte) error {
	r.note(name)
	return r.WriteFileIO.WriteFile(name, p)
}

// Created returns the paths of the files created so far.
func (r *recordingFS) created() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.paths...)
}

// removeAll deletes the files created so far. A file that is gone already,
// because iceberg-go removed it on its own, counts as removed.
func (r *recordingFS) removeAll() (removed int, err error) {
	for _, p := range r.created() {
		switch rerr := r.WriteFileIO.Remove(p); {
		case rerr == nil:
			removed++
		case errors.Is(rerr, iofs.ErrNotExist):
		default:
			err = errors.Join(err, rerr)
		}
	}
	return removed, err
}

package cold

import (
	"crypto/sha256"
	"errors"
	iofs "io/fs"
	"sync"

	icebergio "github.com/apache/iceberg-go/io"
)

// A recordingFS passes everything through to a table's file IO and
// remembers every file it was asked to create: data files, manifests and
// manifest lists alike. It is how a commit that did not land knows, without
// listing the warehouse, every file it has to delete. It also hashes every
// file as it is written, so that a commit records its data files' digests
// without reading them again.
type recordingFS struct {
	icebergio.WriteFileIO

	mu     sync.Mutex
	paths  []string
	hashes map[string]FileDigest // by path key, of the files closed intact
}

func (r *recordingFS) note(name string) {
	r.mu.Lock()
	r.paths = append(r.paths, name)
	r.mu.Unlock()
}

func (r *recordingFS) hashed(name string, size int64, sum string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.hashes == nil {
		r.hashes = map[string]FileDigest{}
	}
	r.hashes[pathKey(name)] = FileDigest{Path: name, Size: size, SHA256: sum}
}

// digest returns the size and SHA-256 of the file at loc as it was written
// through r; ok is false for a file r did not write whole.
func (r *recordingFS) digest(loc string) (FileDigest, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	d, ok := r.hashes[pathKey(loc)]
	return d, ok
}

// Create implements icebergio.WriteFileIO. The path is noted first, so a
// file that fails halfway is deleted too.
func (r *recordingFS) Create(name string) (icebergio.FileWriter, error) {
	r.note(name)
	w, err := r.WriteFileIO.Create(name)
	if err != nil {
		return nil, err
	}
	return &hashingWriter{FileWriter: w, h: sha256.New(), done: func(size int64, sum string) { r.hashed(name, size, sum) }}, nil
}

// WriteFile implements icebergio.WriteFileIO.
func (r *recordingFS) WriteFile(name string, p []byte) error {
	r.note(name)
	if err := r.WriteFileIO.WriteFile(name, p); err != nil {
		return err
	}
	r.hashed(name, int64(len(p)), sha256Hex(p))
	return nil
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
	return r.removeSince(0)
}

// removeSince deletes the files created after the first n, and forgets
// them: the staging of a commit attempt that lost, whose data files stay
// for the next attempt.
func (r *recordingFS) removeSince(n int) (removed int, err error) {
	r.mu.Lock()
	paths := append([]string(nil), r.paths[min(n, len(r.paths)):]...)
	r.mu.Unlock()
	for _, p := range paths {
		switch rerr := r.WriteFileIO.Remove(p); {
		case rerr == nil:
			removed++
		case errors.Is(rerr, iofs.ErrNotExist):
		default:
			err = errors.Join(err, rerr)
		}
	}
	if err == nil && n > 0 {
		r.mu.Lock()
		r.paths = r.paths[:n]
		r.mu.Unlock()
	}
	return removed, err
}

package blob

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// local stores each object as a file below root, the key's segments being
// directories. It does not use gocloud.dev/blob/fileblob, whose IfNotExist
// is atomic only within one process: here link(2), which fails if the new
// name exists, decides between writers, whatever process they are in.
type local struct {
	root string
}

func openLocal(root string) (*local, error) {
	fi, err := os.Stat(root)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", root)
	}
	return &local{root: root}, nil
}

func (l *local) path(key string) string {
	return filepath.Join(l.root, filepath.FromSlash(key))
}

func (l *local) get(ctx context.Context, key string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	data, err := os.ReadFile(l.path(key))
	// ENOTDIR: a prefix of key is an object ("a" of "a/b"). EISDIR: key is
	// a directory holding other keys. Neither is an object under key.
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.EISDIR) {
		return nil, ErrNotFound
	}
	return data, err
}

// putIfAbsent writes data to a temporary file next to the final name,
// syncs it, and links it into place. The object appears complete or not at
// all; a crash leaves at most a temporary file, which List never shows.
func (l *local) putIfAbsent(ctx context.Context, key string, data []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	name := l.path(key)
	dir := filepath.Dir(name)
	tmp, err := l.writeTemp(dir, data)
	if err != nil {
		return err
	}
	defer os.Remove(tmp) // gone already on success; on failure, tidy up
	if err := os.Link(tmp, name); err != nil {
		if errors.Is(err, fs.ErrExist) {
			if fi, err := os.Lstat(name); err == nil && fi.IsDir() {
				return fmt.Errorf("keys below %s/ exist; the local driver cannot store both", key)
			}
			return ErrExists
		}
		return err
	}
	// A temporary file left behind would be harmless; the deferred
	// Remove tries again.
	os.Remove(tmp)
	// The new name is durable only once its directory is.
	return syncDir(dir)
}

// put replaces the object atomically: rename(2) swaps the name in one step,
// so a reader sees the old bytes or the new, never a mix.
func (l *local) put(ctx context.Context, key string, data []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	name := l.path(key)
	dir := filepath.Dir(name)
	tmp, err := l.writeTemp(dir, data)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, name); err != nil {
		os.Remove(tmp)
		return err
	}
	return syncDir(dir)
}

// writeTemp writes data to a new temporary file in dir, synced, and
// returns its name.
func (l *local) writeTemp(dir string, data []byte) (string, error) {
	f, err := l.createTemp(dir)
	if err != nil {
		return "", err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// createTemp creates a temporary file in dir, creating dir first if need
// be. A concurrent delete may prune dir between the two steps; then it
// tries again.
func (l *local) createTemp(dir string) (*os.File, error) {
	for attempt := 0; ; attempt++ {
		if err := l.mkdirAll(dir); err != nil {
			return nil, err
		}
		f, err := os.CreateTemp(dir, tempPrefix+"*")
		if err == nil || !errors.Is(err, fs.ErrNotExist) || attempt == 10 {
			return f, err
		}
	}
}

// mkdirAll is os.MkdirAll below the root, except that it syncs the parent
// of every directory it creates: otherwise a crash could lose the directory
// and with it an object already reported as stored.
func (l *local) mkdirAll(dir string) error {
	fi, err := os.Stat(dir)
	if err == nil {
		if !fi.IsDir() {
			return fmt.Errorf("%s exists and is not a directory; the local driver cannot store a key and keys below it", dir)
		}
		return nil
	}
	if dir == l.root || !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	parent := filepath.Dir(dir)
	if err := l.mkdirAll(parent); err != nil {
		return err
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil // a concurrent writer made it
		}
		return err
	}
	return syncDir(parent)
}

// delete removes the file and then every directory it leaves empty, so that
// a key "a" can be stored once the last key below "a/" is gone.
func (l *local) delete(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	name := l.path(key)
	fi, err := os.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.IsDir() {
		return nil // no object, only keys below it
	}
	if err := os.Remove(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	dir := filepath.Dir(name)
	if err := syncDir(dir); err != nil {
		return err
	}
	// Pruning fails harmlessly on a directory that is not empty, for
	// instance because a writer just created a temporary file in it.
	for ; dir != l.root; dir = filepath.Dir(dir) {
		if os.Remove(dir) != nil {
			break
		}
	}
	return nil
}

// list walks the tree in key order: a directory's entries sorted by name,
// with "/" appended to directory names, are in the order of the keys they
// hold, because every key below directory d starts with "d/". So the walk
// can stop after n objects and skip subtrees outside prefix or before
// startAfter.
func (l *local) list(ctx context.Context, prefix, startAfter string, n int) ([]Object, error) {
	// Start in the deepest directory the prefix names in full.
	base := ""
	if i := strings.LastIndexByte(prefix, '/'); i >= 0 {
		base = prefix[:i+1]
		if checkKey(base[:i]) != nil {
			return nil, nil // no key can start with this prefix
		}
	}
	w := walker{ctx: ctx, prefix: prefix, after: startAfter, n: n}
	err := w.walk(l.path(base), base)
	return w.objs, err
}

type walker struct {
	ctx    context.Context
	prefix string
	after  string
	n      int
	objs   []Object
}

// walk visits dir, whose keys all start with keyPrefix (empty or ending in
// "/"), until it has collected w.n objects.
func (w *walker) walk(dir, keyPrefix string) error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR) {
		return nil // pruned or replaced concurrently
	}
	if err != nil {
		return err
	}
	type entry struct {
		key string // with "/" appended for a directory
		fs.DirEntry
	}
	es := make([]entry, 0, len(entries))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), tempPrefix) {
			continue
		}
		k := keyPrefix + e.Name()
		if e.IsDir() {
			k += "/"
		} else if !e.Type().IsRegular() {
			continue // symlinks and the like are not objects
		}
		es = append(es, entry{k, e})
	}
	slices.SortFunc(es, func(a, b entry) int { return cmp.Compare(a.key, b.key) })
	for _, e := range es {
		if len(w.objs) >= w.n {
			return nil
		}
		if e.IsDir() {
			if !strings.HasPrefix(e.key, w.prefix) && !strings.HasPrefix(w.prefix, e.key) {
				continue
			}
			if e.key < w.after && !strings.HasPrefix(w.after, e.key) {
				continue // every key below sorts before w.after
			}
			if err := w.walk(filepath.Join(dir, e.Name()), e.key); err != nil {
				return err
			}
			continue
		}
		if e.key <= w.after || !strings.HasPrefix(e.key, w.prefix) {
			continue
		}
		fi, err := e.Info()
		if errors.Is(err, fs.ErrNotExist) {
			continue // deleted concurrently
		}
		if err != nil {
			return err
		}
		w.objs = append(w.objs, Object{Key: e.key, Size: fi.Size()})
	}
	return nil
}

func (l *local) close() error { return nil }

// syncDir makes the entries of dir durable. A directory that a concurrent
// delete has pruned has no entries left to keep, so that is no error.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

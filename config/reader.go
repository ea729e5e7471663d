package config

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/BurntSushi/toml"
)

// A reader turns a decoded file into a Config, collecting the problems it
// finds.
type reader struct {
	file   string                      // for errors; empty for Parse
	dir    string                      // absolute; relative paths resolve against it
	env    func(string) (string, bool) // expands ${VAR}
	keys   []keyLine                   // the file's keys, in order
	lines  map[string]int              // key path → line
	errs   []*Error
	failed map[string]bool // key paths with a problem
}

// newReader returns a reader for the file src, whose keys the decoder
// listed, resolving paths against dir and ${VAR} through env.
func newReader(file, dir, src string, keys []toml.Key, env func(string) (string, bool)) *reader {
	r := &reader{file: file, dir: dir, env: env, lines: map[string]int{}, failed: map[string]bool{}}
	r.keys = locate(src, keys, arrays...)
	for _, k := range r.keys {
		if k.line > 0 {
			r.lines[k.path] = k.line
		}
	}
	return r
}

// errorf records a problem with the key at path.
func (r *reader) errorf(path, format string, args ...any) {
	r.failed[path] = true
	r.errs = append(r.errs, &Error{File: r.file, Line: r.line(path), Key: path, Err: fmt.Errorf(format, args...)})
}

// line returns the line of the key at path, or of its nearest enclosing
// key that the file names; zero if none.
func (r *reader) line(path string) int {
	for path != "" {
		if l := r.lines[path]; l > 0 {
			return l
		}
		if strings.HasSuffix(path, "]") {
			path = path[:strings.LastIndexByte(path, '[')]
			continue
		}
		i := strings.LastIndexByte(path, '.')
		if i < 0 {
			break
		}
		path = path[:i]
	}
	return 0
}

// ok reports whether none of paths, nor any key below them, has a problem.
func (r *reader) ok(paths ...string) bool {
	for k := range r.failed {
		for _, p := range paths {
			if k == p || strings.HasPrefix(k, p+".") || strings.HasPrefix(k, p+"[") {
				return false
			}
		}
	}
	return true
}

// err returns the problems found, in the order of their lines.
func (r *reader) err() error {
	if len(r.errs) == 0 {
		return nil
	}
	slices.SortStableFunc(r.errs, func(a, b *Error) int {
		switch {
		case a.Line == 0 && b.Line != 0:
			return 1
		case b.Line == 0 && a.Line != 0:
			return -1
		}
		return cmp.Compare(a.Line, b.Line)
	})
	errs := make([]error, len(r.errs))
	for i, e := range r.errs {
		errs[i] = e
	}
	return errors.Join(errs...)
}

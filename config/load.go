package config

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/BurntSushi/toml"
)

// Load reads the configuration file at path. Relative paths in it resolve
// against the file's directory, and ${VAR} expands from the environment.
// The error reports every problem found, each an *Error joined with
// errors.Join.
func Load(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config: %w", err)
	}
	return parse(data, filepath.Dir(path), path, os.LookupEnv)
}

// Parse reads a configuration from data. Relative paths resolve against
// dir, or the working directory if dir is empty, and ${VAR} expands through
// env, which reports whether a variable is set; a nil env sets none. The
// error reports every problem found, each an *Error joined with
// errors.Join.
func Parse(data []byte, dir string, env func(string) (string, bool)) (*Config, error) {
	return parse(data, dir, "", env)
}

// Default returns the configuration Template describes, with relative
// paths resolved against the working directory.
func Default() *Config {
	c, err := Parse([]byte(Template()), "", nil)
	if err != nil {
		panic("config: the template does not parse: " + err.Error())
	}
	return c
}

func parse(data []byte, dir, file string, env func(string) (string, bool)) (*Config, error) {
	if env == nil {
		env = func(string) (string, bool) { return "", false }
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("config: resolve the directory %q: %w", dir, err)
	}
	// The first pass sees the file as it is, for the lines of its keys and
	// the shape of its sections; the second decodes it into rawConfig.
	var tree map[string]any
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&tree)
	if err != nil {
		return nil, decodeError(file, err)
	}
	r := newReader(file, abs, string(data), md.Keys(), env)
	if r.shape(tree); len(r.errs) > 0 {
		return nil, r.err()
	}
	var raw rawConfig
	if md, err = toml.NewDecoder(bytes.NewReader(data)).Decode(&raw); err != nil {
		return nil, decodeError(file, err)
	}
	r.unknown(md.Undecoded())
	c := r.config(&raw)
	r.check(c)
	if err := r.err(); err != nil {
		return nil, err
	}
	return c, nil
}

// decodeError returns an error of the toml decoder as an *Error.
func decodeError(file string, err error) error {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		return &Error{File: file, Line: pe.Position.Line, Err: syntaxError{pe}}
	}
	return &Error{File: file, Err: err}
}

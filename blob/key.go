package blob

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// maxKeyLen is the longest key S3 accepts.
const maxKeyLen = 1024

// tempPrefix starts the names of the local driver's temporary files. Keys
// may not use it, so a temporary file can never be mistaken for an object.
const tempPrefix = ".tmp-"

// checkKey returns an error wrapping ErrInvalidKey unless key is valid.
//
// The rules are the intersection of what every backend stores faithfully:
// a key maps one-to-one onto a relative file path below the local root and
// onto an S3 key that no SDK escapes or normalizes.
func checkKey(key string) error {
	switch {
	case key == "":
		return fmt.Errorf("%w: empty", ErrInvalidKey)
	case len(key) > maxKeyLen:
		return fmt.Errorf("%w: longer than %d bytes", ErrInvalidKey, maxKeyLen)
	case !utf8.ValidString(key):
		return fmt.Errorf("%w: not valid UTF-8", ErrInvalidKey)
	}
	for _, r := range key {
		switch {
		case r < 0x20 || r == 0x7f:
			return fmt.Errorf("%w: control character %U", ErrInvalidKey, r)
		case r == '\\':
			return fmt.Errorf("%w: backslash", ErrInvalidKey)
		}
	}
	for seg := range strings.SplitSeq(key, "/") {
		switch {
		case seg == "":
			return fmt.Errorf("%w: empty segment (leading, trailing or double slash)", ErrInvalidKey)
		case seg == "." || seg == "..":
			return fmt.Errorf("%w: %q segment", ErrInvalidKey, seg)
		case strings.HasPrefix(seg, tempPrefix):
			return fmt.Errorf("%w: segment starts with reserved %q", ErrInvalidKey, tempPrefix)
		}
	}
	return nil
}

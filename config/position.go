package config

import (
	"slices"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"
)

// The toml decoder reports a position only for the error it stops at, and
// for a key in an array of tables only that of its last element. Lines for
// the problems found after decoding therefore come from matching the keys
// the decoder lists, in document order, with the definitions a scan of the
// source finds in the same order.

// A keyLine is one key of a document: its path as the decoder names it,
// its path with array indices, and its line (zero if not found).
type keyLine struct {
	key  toml.Key
	path string
	line int
}

// locate finds the line and the indexed path of every key in keys, which
// must be in document order as toml.MetaData.Keys lists them. arrays are
// the paths, such as "table" and "table.column", whose elements indexed
// paths count.
func locate(src string, keys []toml.Key, arrays ...string) []keyLine {
	defs := scan(src)
	index := map[string]int{} // array path → current element
	start := func(a string, i int) {
		index[a] = i
		for _, b := range arrays {
			if strings.HasPrefix(b, a+".") {
				index[b] = -1
			}
		}
	}
	out := make([]keyLine, 0, len(keys))
	next := 0
	for _, k := range keys {
		var d *definition
		for i := next; i < len(defs); i++ {
			if defs[i].defines(k) {
				d, next = &defs[i], i+1
				break
			}
		}
		if a := innermost(arrays, k); a != "" && d != nil && d.elem >= 0 && index[a] != d.elem {
			start(a, d.elem) // a key of an inline table in the array a
		}
		plain := strings.Join(k, ".")
		header := d != nil && d.array
		if slices.Contains(arrays, plain) {
			if header {
				start(plain, d.count)
			} else {
				start(plain, -1)
			}
		}
		kl := keyLine{key: k, path: indexed(k, arrays, index)}
		if header {
			kl.path += "[" + strconv.Itoa(d.count) + "]"
		}
		if d != nil {
			kl.line = d.line
		}
		out = append(out, kl)
	}
	return out
}

// innermost returns the longest array path that is a proper prefix of k.
func innermost(arrays []string, k toml.Key) string {
	best := ""
	for _, a := range arrays {
		n := strings.Count(a, ".") + 1
		if n < len(k) && strings.Join(k[:n], ".") == a && len(a) > len(best) {
			best = a
		}
	}
	return best
}

// indexed returns the path of k with the current index after every array
// it passes through.
func indexed(k toml.Key, arrays []string, index map[string]int) string {
	var b strings.Builder
	for i, seg := range k {
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(keySegment(seg))
		p := strings.Join(k[:i+1], ".")
		if slices.Contains(arrays, p) && i < len(k)-1 {
			b.WriteString("[" + strconv.Itoa(max(index[p], 0)) + "]")
		}
	}
	return b.String()
}

// keySegment returns seg as TOML writes it: bare if it can be, else quoted.
func keySegment(seg string) string {
	if seg == "" {
		return `""`
	}
	for _, c := range seg {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return strconv.Quote(seg)
		}
	}
	return seg
}

// A definition is a header or an assignment found in the source.
type definition struct {
	line   int      // from 1
	key    []string // the header's key, or the assigned key as written
	header bool
	array  bool // an [[array]] header
	count  int  // for an [[array]] header, the element it starts
	// elem is the element of the nearest enclosing array value for an
	// assignment inside an inline table, else -1.
	elem int
}

// defines reports whether d is the header of k or assigns it.
func (d definition) defines(k toml.Key) bool {
	if d.header {
		return slices.Equal(d.key, k)
	}
	return len(d.key) <= len(k) && slices.Equal(d.key, k[len(k)-len(d.key):])
}

// scan returns the headers and assignments of src in document order. It
// follows strings, arrays and inline tables, so that text inside a value
// is not taken for a key, nor a line of a multi-line array for a header.
func scan(src string) []definition {
	var (
		defs   []definition
		open   []struct{ c, elems int } // brackets and braces of the value being read
		multi  string                   // the delimiter of an open multi-line string
		counts = map[string]int{}       // [[array]] path → elements so far
	)
	for n, t := range strings.Split(src, "\n") {
		i := 0
		if multi != "" {
			end := strings.Index(t, multi)
			if end < 0 {
				continue
			}
			i, multi = end+len(multi), ""
		}
		expectKey := i == 0 && (len(open) == 0 || open[len(open)-1].c == '{')
	line:
		for i < len(t) {
			c := t[i]
			switch {
			case c == ' ' || c == '\t' || c == '\r':
				i++
			case c == '#':
				break line
			case expectKey && len(open) == 0 && c == '[':
				d := definition{line: n + 1, header: true, array: strings.HasPrefix(t[i:], "[["), elem: -1}
				if d.array {
					i++
				}
				if d.key, _ = scanKey(t[i+1:], ']'); d.key == nil {
					break line
				}
				if d.array {
					p := strings.Join(d.key, ".")
					d.count = counts[p]
					counts[p]++
					for q := range counts {
						if strings.HasPrefix(q, p+".") {
							delete(counts, q)
						}
					}
				}
				defs = append(defs, d)
				break line
			case expectKey:
				key, w := scanKey(t[i:], '=')
				if key == nil {
					break line
				}
				d := definition{line: n + 1, key: key, elem: -1}
				for j := len(open) - 1; j >= 0; j-- {
					if open[j].c == '[' {
						d.elem = open[j].elems - 1
						break
					}
				}
				defs = append(defs, d)
				i += w
				expectKey = false
			case c == '"' || c == '\'':
				q := t[i : i+1]
				if strings.HasPrefix(t[i:], q+q+q) {
					end := strings.Index(t[i+3:], q+q+q)
					if end < 0 {
						multi = q + q + q
						break line
					}
					i += 3 + end + 3
					continue
				}
				i = skipString(t, i)
			case c == '[' || c == '{':
				if c == '{' && len(open) > 0 && open[len(open)-1].c == '[' {
					open[len(open)-1].elems++
				}
				open = append(open, struct{ c, elems int }{int(c), 0})
				expectKey = c == '{'
				i++
			case c == ']' || c == '}':
				if len(open) > 0 {
					open = open[:len(open)-1]
				}
				i++
			case c == ',':
				expectKey = len(open) > 0 && open[len(open)-1].c == '{'
				i++
			default:
				i++
			}
		}
	}
	return defs
}

// scanKey reads a dotted key that ends at the byte end and returns its
// segments and the length read, end included; nil if t does not start with
// one.
func scanKey(t string, end byte) ([]string, int) {
	var segs []string
	i := 0
	for {
		for i < len(t) && (t[i] == ' ' || t[i] == '\t') {
			i++
		}
		if i == len(t) {
			return nil, 0
		}
		switch c := t[i]; {
		case c == '"' || c == '\'':
			j := skipString(t, i)
			seg := t[i+1 : max(j-1, i+1)]
			if c == '"' {
				if u, err := strconv.Unquote(t[i:j]); err == nil {
					seg = u
				}
			}
			segs = append(segs, seg)
			i = j
		default:
			j := i
			for j < len(t) && (t[j] >= 'a' && t[j] <= 'z' || t[j] >= 'A' && t[j] <= 'Z' || t[j] >= '0' && t[j] <= '9' || t[j] == '_' || t[j] == '-') {
				j++
			}
			if j == i {
				return nil, 0
			}
			segs = append(segs, t[i:j])
			i = j
		}
		for i < len(t) && (t[i] == ' ' || t[i] == '\t') {
			i++
		}
		switch {
		case i < len(t) && t[i] == '.':
			i++
		case i < len(t) && t[i] == end:
			return segs, i + 1
		default:
			return nil, 0
		}
	}
}

// skipString returns the index after the single-line string starting at
// t[i], or len(t) if it does not end on the line.
func skipString(t string, i int) int {
	q := t[i]
	for j := i + 1; j < len(t); j++ {
		switch {
		case t[j] == '\\' && q == '"':
			j++
		case t[j] == q:
			return j + 1
		}
	}
	return len(t)
}

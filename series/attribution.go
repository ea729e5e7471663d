package series

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The attribution columns record where a reading came from and who formed
// it: the provenance columns (ColumnSourceKind, ColumnSourceRef) and
// ColumnSubstitutedBy. Their values come from outside the reading (a file
// name, an HTTP header or query parameter, a CSV cell), are stored on
// every reading of a delivery, and are printed by operators' tools: so
// they are plain text of a bounded length, checked here for both tiers.

// ColumnSubstitutedBy is the text column a table declares to record who
// formed a substitute value (the store's WriteOptions.Substitute).
const ColumnSubstitutedBy = "substituted_by"

// MaxAttributionLen is the longest value of an attribution column, in
// bytes: a file path or a market partner's id fits many times over, and a
// delivery of N readings stores at most N times this much of it.
const MaxAttributionLen = 1024

// Attribution reports whether c is an attribution column, whose values
// CheckAttribution bounds.
func (c Column) Attribution() bool {
	return c.Provenance() || c.Name == ColumnSubstitutedBy
}

// CheckAttribution reports why v cannot be the value of an attribution
// column, or nil: it is empty, longer than MaxAttributionLen bytes, not
// UTF-8, or holds a control character (NUL, a line break, an escape
// sequence's ESC: U+0000 to U+001F and U+007F to U+009F). The hot tier's
// CHECK on such a column says the same.
func CheckAttribution(v string) error {
	switch {
	case v == "":
		return fmt.Errorf("empty")
	case len(v) > MaxAttributionLen:
		return fmt.Errorf("%d bytes, longer than the %d allowed", len(v), MaxAttributionLen)
	case !utf8.ValidString(v):
		return fmt.Errorf("not valid UTF-8")
	}
	if i := strings.IndexFunc(v, unicode.IsControl); i >= 0 {
		r, _ := utf8.DecodeRuneInString(v[i:])
		return fmt.Errorf("control character %U at byte %d", r, i)
	}
	return nil
}

// checkText reports why v cannot be stored in a text column, or nil: a
// NUL, which PostgreSQL's text cannot hold, or bytes that are not UTF-8,
// which it refuses. The cold tier could store either, so the rule is here,
// where both tiers apply it.
func checkText(v string) error {
	if i := strings.IndexByte(v, 0); i >= 0 {
		return fmt.Errorf("NUL at byte %d", i)
	}
	if !utf8.ValidString(v) {
		return fmt.Errorf("not valid UTF-8")
	}
	return nil
}

// maxShownValue bounds the bytes of a value an error quotes.
const maxShownValue = 64

// shownValue returns v quoted for an error, cut short if it is long: a
// value may be anything a delivery holds, megabytes of it.
func shownValue(v string) string {
	if len(v) <= maxShownValue {
		return strconv.Quote(v)
	}
	return fmt.Sprintf("%s... (%d bytes)", strconv.Quote(v[:maxShownValue]), len(v))
}

package series

import (
	"errors"
	"fmt"
	"testing"
)

func TestErrorMessage(t *testing.T) {
	var p Problems
	for i := range 8 {
		p.Add(20-i, "bad %d", 20-i)
	}
	p.Add(20, "reported twice")
	var e *Error
	if !errors.As(p.Err(InvalidInput, "write", "lastgang"), &e) {
		t.Fatal("no *Error")
	}
	want := "write lastgang: invalid input: 8 row(s); row 13: bad 13; row 14: bad 14; row 15: bad 15; row 16: bad 16; row 17: bad 17; and 3 more"
	if e.Error() != want || len(e.Rows) != 8 || e.Rows[0] != 13 {
		t.Fatalf("%q\nrows %v", e.Error(), e.Rows)
	}
}

// TestRenameRow renames the row a reason refers to, and nothing after
// its first colon, where values are quoted.
func TestRenameRow(t *testing.T) {
	lines := []int{2, 3, 9}
	name := func(i int) (string, bool) {
		if i >= len(lines) {
			return "", false
		}
		return fmt.Sprint("line ", lines[i]), true
	}
	for _, c := range []struct{ in, want string }{
		{"restates row 2 under version 1 with a different value", "restates line 9 under version 1 with a different value"},
		{"network operator 9900000000003, but row 0 of the same reading has 9900000000010", "network operator 9900000000003, but line 2 of the same reading has 9900000000010"},
		{"overlaps row 1 (PT1H from 2026-03-01T00:00:00Z) within version 4", "overlaps line 3 (PT1H from 2026-03-01T00:00:00Z) within version 4"},
		{"restates row 1 under the same key and version: channel row 2, now row 0", "restates line 3 under the same key and version: channel row 2, now row 0"},
		{"restates version 4: channel row 2, stored row 1", "restates version 4: channel row 2, stored row 1"},
		{"restates row 3 under version 1", "restates row 3 under version 1"}, // not a row of this batch
		{"failed check digit", "failed check digit"},
	} {
		if got := (Problem{Reason: c.in}).RenameRow(name); got != c.want {
			t.Errorf("%q: got %q, want %q", c.in, got, c.want)
		}
	}
}

package series

import (
	"errors"
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

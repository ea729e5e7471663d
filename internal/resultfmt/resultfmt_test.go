package resultfmt

import (
	"slices"
	"testing"
)

func TestUniqueNames(t *testing.T) {
	got := UniqueNames([]string{"a", "a", "a_2", "b", "a", "b"})
	want := []string{"a", "a_3", "a_2", "b", "a_4", "b_2"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

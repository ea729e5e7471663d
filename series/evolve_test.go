package series

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestEvolve(t *testing.T) {
	have := []Column{{Name: "channel", Identity: true}, {Name: "note"}, {Name: "kind", Values: []string{"a"}}}
	ev, err := Evolve("t", have, []Column{{Name: "channel", Identity: true}, {Name: "tariff"}, {Name: "kind", Values: []string{"a"}}, {Name: "seq", Type: BigInt}})
	if err != nil {
		t.Fatal(err)
	}
	names := func(cs []Column) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.Name)
		}
		return out
	}
	if !slices.Equal(names(ev.Add), []string{"tariff", "seq"}) || !slices.Equal(names(ev.Undeclared), []string{"note"}) || ev.Empty() {
		t.Fatalf("evolution %+v", ev)
	}
	if ev, err := Evolve("t", have, have); err != nil || !ev.Empty() {
		t.Fatalf("unchanged: %+v, %v", ev, err)
	}
	// Every unsafe change is named, not only the first.
	_, err = Evolve("t", have, []Column{{Name: "note", Type: BigInt}, {Name: "kind", Values: []string{"a", "b"}}, {Name: "phase", Identity: true}})
	var q *QuarantineError
	if !errors.As(err, &q) || len(q.Reasons) != 4 || IsRetryable(err) {
		t.Fatalf("quarantine: %v", err)
	}
	for _, word := range []string{`"note": type text before, bigint now`, `"kind": values`, `"phase" is a new identity column`, `identity column "channel" is dropped`} {
		if !strings.Contains(err.Error(), word) {
			t.Errorf("%v does not say %q", err, word)
		}
	}
}

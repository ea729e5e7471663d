package series

import (
	"fmt"
	"slices"
	"strings"
)

// An Evolution is a change of a table's declared extra columns that both
// tiers apply in place: nullable attribute columns added, or no longer
// declared. Rows stored before read NULL in an added column. A column no
// longer declared stays in both tiers, undeclared: no query of this
// declaration shows it, rows it writes hold NULL there, and the values
// others wrote stay, so that declaring it again, or a process on the other
// declaration, reads them. No declaration change makes stored values
// unreadable.
type Evolution struct {
	Add        []Column // declared now and not before, in declaration order
	Undeclared []Column // declared before and not now, in their former order
}

// Empty reports whether the evolution changes nothing.
func (e Evolution) Empty() bool { return len(e.Add) == 0 && len(e.Undeclared) == 0 }

// Evolve classifies the change of table's extra columns from have, as
// stored rows were written, to want, as declared now. It is the one rule
// both tiers follow, seed 004's drift rules for the columns a declaration
// can express:
//   - a nullable attribute column added or no longer declared is an
//     Evolution;
//   - an identity column added or dropped, or an attribute column made an
//     identity column or the reverse, quarantines: identity columns are
//     required and belong to the merge key, and changing the key merges or
//     splits series without an error anywhere;
//   - a changed type quarantines: text and bigint do not widen into each
//     other (the widenings the cold comparison also allows, decimal
//     precision and int to long, concern types no declaration has);
//   - a changed Values list quarantines: narrowing it would fail stored
//     rows, and widening it swaps a CHECK on every partition, an
//     operator's job. Iceberg has no CHECK, so only the hot tier sees it.
//
// A rename is an add (the old name stays, undeclared), so it passes for
// attribute columns only.
// The error is a *QuarantineError with one reason per unsafe change.
func Evolve(table string, have, want []Column) (Evolution, error) {
	var (
		ev      Evolution
		reasons []string
	)
	find := func(cs []Column, name string) (Column, bool) {
		i := slices.IndexFunc(cs, func(c Column) bool { return c.Name == name })
		if i < 0 {
			return Column{}, false
		}
		return cs[i], true
	}
	for _, w := range want {
		h, ok := find(have, w.Name)
		switch {
		case !ok && w.Identity:
			reasons = append(reasons, fmt.Sprintf("column %q is a new identity column: adding a required column to the merge key is not safe", w.Name))
		case !ok:
			ev.Add = append(ev.Add, w)
		case h.Identity != w.Identity:
			reasons = append(reasons, fmt.Sprintf("column %q: identity %t before, %t now: the merge key would change", w.Name, h.Identity, w.Identity))
		case h.ColumnType() != w.ColumnType():
			reasons = append(reasons, fmt.Sprintf("column %q: type %s before, %s now", w.Name, h.ColumnType(), w.ColumnType()))
		case !slices.Equal(h.Values, w.Values):
			reasons = append(reasons, fmt.Sprintf("column %q: values (%s) before, (%s) now: a changed CHECK is an operator's change",
				w.Name, strings.Join(h.Values, ", "), strings.Join(w.Values, ", ")))
		}
	}
	for _, h := range have {
		if _, ok := find(want, h.Name); ok {
			continue
		}
		if h.Identity {
			reasons = append(reasons, fmt.Sprintf("identity column %q is dropped: dropping a required column narrows the merge key", h.Name))
			continue
		}
		ev.Undeclared = append(ev.Undeclared, h)
	}
	if len(reasons) > 0 {
		return Evolution{}, &QuarantineError{Table: table, Reasons: reasons}
	}
	return ev, nil
}

// A QuarantineError reports that a table stopped because the schema it is
// declared with cannot be applied to its stored rows safely, in either
// tier, or the stored schema cannot be read at all. It stays until an
// operator resolves the drift; the rows stay where they are.
type QuarantineError struct {
	Table   string
	Reasons []string // one per unsafe change, in schema order
	Err     error    // why the schema could not be read, if that is the reason
}

// Error names the table and why it is quarantined.
func (e *QuarantineError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "table %s quarantined: ", e.Table)
	b.WriteString(strings.Join(e.Reasons, "; "))
	if e.Err != nil {
		if len(e.Reasons) > 0 {
			b.WriteString(": ")
		}
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns why the schema could not be read, if that is the reason.
func (e *QuarantineError) Unwrap() error { return e.Err }

// IsRetryable reports false: a quarantine stays until an operator acts.
func (e *QuarantineError) IsRetryable() bool { return false }

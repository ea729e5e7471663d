package cold

import (
	"errors"
	"slices"
	"testing"

	"github.com/meterstore/meterstore/series"
)

// evolveCases are changes of declared extra columns, from have to want,
// that both the declaration rule and the cold comparison can see. Changes
// of Values are not among them: Iceberg has no CHECK to compare.
var evolveCases = []struct {
	name       string
	have, want []series.Column
}{
	{name: "unchanged", have: []series.Column{{Name: "source"}}, want: []series.Column{{Name: "source"}}},
	{name: "nullable added", have: []series.Column{{Name: "source"}}, want: []series.Column{{Name: "source"}, {Name: "note"}}},
	{name: "bigint added", want: []series.Column{{Name: "seq", Type: series.BigInt}}},
	{name: "nullable dropped", have: []series.Column{{Name: "source"}, {Name: "note"}}, want: []series.Column{{Name: "source"}}},
	{name: "nullable renamed", have: []series.Column{{Name: "note"}}, want: []series.Column{{Name: "remark"}}},
	{name: "added and dropped", have: []series.Column{{Name: "a"}, {Name: "b"}}, want: []series.Column{{Name: "b"}, {Name: "c"}}},
	{name: "identity kept, nullable added", have: []series.Column{{Name: "channel", Identity: true}},
		want: []series.Column{{Name: "channel", Identity: true}, {Name: "note"}}},
	{name: "text to bigint", have: []series.Column{{Name: "seq"}}, want: []series.Column{{Name: "seq", Type: series.BigInt}}},
	{name: "bigint to text", have: []series.Column{{Name: "seq", Type: series.BigInt}}, want: []series.Column{{Name: "seq"}}},
	{name: "identity added", want: []series.Column{{Name: "channel", Identity: true}}},
	{name: "identity dropped", have: []series.Column{{Name: "channel", Identity: true}}},
	{name: "attribute made identity", have: []series.Column{{Name: "channel"}}, want: []series.Column{{Name: "channel", Identity: true}}},
	{name: "identity made attribute", have: []series.Column{{Name: "channel", Identity: true}}, want: []series.Column{{Name: "channel"}}},
	{name: "identity renamed", have: []series.Column{{Name: "channel", Identity: true}}, want: []series.Column{{Name: "kanal", Identity: true}}},
	{name: "identity type changed", have: []series.Column{{Name: "channel", Identity: true}},
		want: []series.Column{{Name: "channel", Identity: true, Type: series.BigInt}}},
}

// A verdict is what a rule says of a change: quarantine, or the columns
// to add and those no longer declared.
type verdict struct {
	quarantine      bool
	add, undeclared []string
}

func ruleVerdict(have, want []series.Column) verdict {
	ev, err := series.Evolve("t", have, want)
	var q *series.QuarantineError
	if errors.As(err, &q) {
		return verdict{quarantine: true}
	}
	v := verdict{}
	for _, c := range ev.Add {
		v.add = append(v.add, c.Name)
	}
	for _, c := range ev.Undeclared {
		v.undeclared = append(v.undeclared, c.Name)
	}
	return v
}

func coldVerdict(have, want []series.Column) verdict {
	decl := func(cs []series.Column) *series.Table {
		t := loadProfile("t")
		t.Columns = cs
		return t
	}
	add, undeclared, reasons := compareSchemas(Schema(decl(want)), Schema(decl(have)))
	if len(reasons) > 0 {
		return verdict{quarantine: true}
	}
	v := verdict{}
	for _, f := range add {
		v.add = append(v.add, f.Name)
	}
	for _, f := range undeclared {
		v.undeclared = append(v.undeclared, f.Name)
	}
	return v
}

func (v verdict) equal(w verdict) bool {
	return v.quarantine == w.quarantine && slices.Equal(v.add, w.add) && slices.Equal(v.undeclared, w.undeclared)
}

// disagreements returns the cases on which two rules differ.
func disagreements(a, b func(have, want []series.Column) verdict) []string {
	var out []string
	for _, tc := range evolveCases {
		if va, vb := a(tc.have, tc.want), b(tc.have, tc.want); !va.equal(vb) {
			out = append(out, tc.name)
		}
	}
	return out
}

// TestEvolveAgrees checks that the declaration rule both tiers follow
// (series.Evolve) and the cold tier's comparison of Iceberg schemas give
// the same verdict on every change, and that the check has teeth: a rule
// that ignores identity, as the cold comparison once did for an attribute
// made an identity column, disagrees.
func TestEvolveAgrees(t *testing.T) {
	quarantined := 0
	for _, tc := range evolveCases {
		r, c := ruleVerdict(tc.have, tc.want), coldVerdict(tc.have, tc.want)
		if !r.equal(c) {
			t.Errorf("%s: series.Evolve says %+v, the cold comparison %+v", tc.name, r, c)
		}
		if r.quarantine {
			quarantined++
		}
	}
	if quarantined == 0 || quarantined == len(evolveCases) {
		t.Fatalf("%d of %d cases quarantine: the table does not cover both verdicts", quarantined, len(evolveCases))
	}
	blind := func(have, want []series.Column) verdict {
		strip := func(cs []series.Column) []series.Column {
			cs = slices.Clone(cs)
			for i := range cs {
				cs[i].Identity = false
			}
			return cs
		}
		return ruleVerdict(strip(have), strip(want))
	}
	if d := disagreements(ruleVerdict, blind); len(d) == 0 {
		t.Fatal("a rule blind to identity agrees with series.Evolve on every case: the cases lack teeth")
	}
	if d := disagreements(coldVerdict, blind); len(d) == 0 {
		t.Fatal("a rule blind to identity agrees with the cold comparison on every case")
	}
}

// TestEvolveValues: a changed Values list quarantines by the declaration
// rule, which the hot tier applies first; the cold tier cannot see it.
func TestEvolveValues(t *testing.T) {
	have := []series.Column{{Name: "kind", Values: []string{"a", "b"}}}
	for _, want := range [][]series.Column{
		{{Name: "kind", Values: []string{"a"}}},
		{{Name: "kind", Values: []string{"a", "b", "c"}}},
		{{Name: "kind"}},
	} {
		if v := ruleVerdict(have, want); !v.quarantine {
			t.Errorf("values %v to %v: %+v, want quarantine", have[0].Values, want[0].Values, v)
		}
	}
}

// TestEvolveColdTable declares a table with rows anew with one nullable
// column no longer declared and one added: Ensure evolves the Iceberg
// schema in one commit that makes no snapshot, so W stays, and keeps the
// undeclared column with its field; old rows scan without either column,
// new ones carry the added one.
func TestEvolveColdTable(t *testing.T) {
	e := newEnv(t, Options{})
	tab := loadProfile("power")
	h := e.ensure(t, tab)
	jan := quarterHours(0, jan2026, 12)
	e.archive(t, h, jan2026, feb2026, jan)
	ice, err := e.tier.Iceberg(t.Context(), h)
	if err != nil {
		t.Fatal(err)
	}
	snapshots, schemas := len(ice.Metadata().Snapshots()), len(ice.Metadata().Schemas())
	source, _ := ice.Schema().FindFieldByName("source")

	evolved := *tab
	evolved.Columns = []series.Column{{Name: "channel", Identity: true, Values: []string{"A", "B"}}, {Name: "seq", Type: series.BigInt}, {Name: "note"}}
	for range 2 { // the second finds nothing to do
		h = e.ensure(t, &evolved)
	}
	ice, err = e.tier.Iceberg(t.Context(), h)
	if err != nil {
		t.Fatal(err)
	}
	if f, ok := ice.Schema().FindFieldByName("source"); !ok || f.ID != source.ID {
		t.Fatalf("the undeclared column source in the cold schema: %+v, %v; want it kept as %+v", f, ok, source)
	}
	if f, ok := ice.Schema().FindFieldByName("note"); !ok || f.Required {
		t.Fatalf("column note: %+v, %v", f, ok)
	}
	if n := len(ice.Metadata().Snapshots()); n != snapshots {
		t.Fatalf("%d snapshots after the evolution, was %d", n, snapshots)
	}
	if n := len(ice.Metadata().Schemas()); n != schemas+1 {
		t.Fatalf("%d schemas after the evolution, was %d: want one commit", n, schemas)
	}
	if w, ok, err := e.tier.Watermark(t.Context(), h); err != nil || !ok || !w.Equal(feb2026) {
		t.Fatalf("watermark %v, %v, %v after the evolution, want %v", w, ok, err, feb2026)
	}
	feb := quarterHours(0, feb2026, 8)
	for i := range feb {
		delete(feb[i].Extra, "source")
		feb[i].Extra["note"] = "n"
	}
	e.archive(t, h, feb2026, mar2026, feb)
	wantJan := slices.Clone(jan)
	for i := range wantJan {
		extra := map[string]string{}
		for k, v := range wantJan[i].Extra {
			if k != "source" {
				extra[k] = v
			}
		}
		wantJan[i].Extra = extra
	}
	got := collect(t, e.tier.Scan(t.Context(), h, series.Range{}))
	sameReadings(t, &evolved, got, append(wantJan, feb...))
}

package cold

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/meterstore/meterstore/series"
)

// TestSuperseded archives a window with up to three versions per merge key
// and checks that exactly the versions a later one supersedes are marked,
// that the archived file is settled and a late correction's is not, and
// that versions out of order are refused.
func TestSuperseded(t *testing.T) {
	e := newEnv(t, Options{})
	tab := loadProfile("power")
	h := e.ensure(t, tab)

	// Key k gets k%3+1 versions, in ascending version, keys in order.
	var rows []series.Reading
	want := map[string]bool{} // malo|from|version -> superseded
	for k := range 12 {
		base := quarterHour(0, jan2026, k)
		n := k%3 + 1
		for v := range n {
			r := base
			r.Version = base.Version + uint64(v)*10
			r.Value += series.Decimal(v)
			rows = append(rows, r)
			want[markKey(r.MaLo, r.From.UnixMicro(), r.Version)] = v < n-1
		}
	}
	e.archive(t, h, jan2026, feb2026, rows)
	if got := e.marks(t, h); !maps.Equal(got, want) {
		t.Fatalf("superseded marks:\n got %v\nwant %v", got, want)
	}
	p, err := e.tier.Plan(t.Context(), h, series.Range{})
	if err != nil {
		t.Fatal(err)
	}
	// The superseded versions are kept apart: one file of current rows,
	// one of superseded ones.
	if !sameKinds(p.Kinds, Current, Superseded) {
		t.Fatalf("plan after archival: files %v, kinds %v; want one current and one superseded file", p.Files, p.Kinds)
	}

	// A late correction is not decided at archival: null, not settled.
	fix := rows[0]
	fix.Version += 1000
	fix.Value += 7
	if _, err := e.tier.AppendLate(t.Context(), h, []series.Reading{fix}); err != nil {
		t.Fatal(err)
	}
	if got := e.marks(t, h)[markKey(fix.MaLo, fix.From.UnixMicro(), fix.Version)+"|null"]; !got {
		t.Fatal("the late correction's superseded column is not null")
	}
	p, err = e.tier.Plan(t.Context(), h, series.Range{})
	if err != nil {
		t.Fatal(err)
	}
	if !sameKinds(p.Kinds, Current, Superseded, Open) {
		t.Fatalf("plan after a late correction: files %v, kinds %v; want an open file besides", p.Files, p.Kinds)
	}
	for i, f := range p.Files {
		if want := map[FileKind]string{Current: "superseded=false", Superseded: "superseded=true", Open: "superseded=null"}[p.Kinds[i]]; !strings.Contains(f, want) {
			t.Errorf("file %s of kind %d is not in the partition %s", f, p.Kinds[i], want)
		}
	}

	// Versions of a key out of order would mark the wrong one.
	h2 := e.ensure(t, loadProfile("power_desc"))
	a, b := quarterHour(1, jan2026, 0), quarterHour(1, jan2026, 0)
	b.Version = a.Version - 1
	b.Value++
	_, err = e.tier.Archive(t.Context(), h2, feb2026, jan2026, feb2026, Readings([]series.Reading{a, b}))
	var se *series.Error
	if !errors.As(err, &se) || se.Kind != series.InvalidInput || !slices.Equal(se.Rows, []int{1}) || !strings.Contains(err.Error(), "follows version") {
		t.Fatalf("versions out of order: %v; want an invalid-input error naming row 1", err)
	}
}

func markKey(malo string, from int64, version uint64) string {
	return fmt.Sprintf("%s|%d|%d", malo, from, version)
}

// marks reads the superseded column of every row of h: by malo|from|version,
// with the suffix |null where it is null.
func (e *env) marks(t *testing.T, h *Table) map[string]bool {
	t.Helper()
	ice, err := e.tier.Iceberg(t.Context(), h)
	if err != nil {
		t.Fatal(err)
	}
	s := ice.Scan(table.WithSelectedFields("malo_id", "from", "version", series.ColumnSuperseded))
	defer s.Close()
	tbl, err := s.ToArrowTable(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	out := map[string]bool{}
	tr := array.NewTableReader(tbl, 1024)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		m := rec.Column(0).(*array.String)
		f := rec.Column(1).(*array.Timestamp)
		v := rec.Column(2).(*array.Decimal128)
		sup := rec.Column(3).(*array.Boolean)
		for i := range int(rec.NumRows()) {
			k := markKey(m.Value(i), int64(f.Value(i)), v.Value(i).LowBits())
			if sup.IsNull(i) {
				out[k+"|null"] = true
				continue
			}
			out[k] = sup.Value(i)
		}
	}
	return out
}

// TestKeyOrder checks the order an archived window's readings must come
// in: each refusal names the reading that breaks it.
func TestKeyOrder(t *testing.T) {
	tab := loadProfile("power") // monthly partitions, identity column channel
	qh := func(i, k int, mod func(*series.Reading)) series.Reading {
		r := quarterHour(i, jan2026, k)
		if mod != nil {
			mod(&r)
		}
		return r
	}
	obis := func(o string) func(*series.Reading) { return func(r *series.Reading) { r.OBIS = o } }
	channel := func(c string) func(*series.Reading) { return func(r *series.Reading) { r.Extra["channel"] = c } }
	version := func(v uint64) func(*series.Reading) { return func(r *series.Reading) { r.Version = v } }
	feb := func(i int) series.Reading { return quarterHours(i, feb2026, 1)[0] }
	for _, tc := range []struct {
		name string
		rows []series.Reading
		same []bool
		bad  int // the refused reading, -1 for none
		says string
	}{
		{"versions, keys, series", []series.Reading{qh(0, 0, version(1)), qh(0, 0, version(2)), qh(0, 1, nil), qh(0, 1, obis("1-1:2.29.0")), qh(1, 0, nil)},
			[]bool{false, true, false, false, false}, -1, ""},
		{"identity columns", []series.Reading{qh(0, 0, channel("A")), qh(0, 0, channel("B")), qh(0, 0, func(r *series.Reading) { r.Extra["channel"] = "B"; r.Version++ })},
			[]bool{false, false, true}, -1, ""},
		{"next partition", []series.Reading{qh(1, 0, nil), qh(1, 1, obis("1-1:2.29.0")), feb(0), feb(1)}, []bool{false, false, false, false}, -1, ""},
		{"version down", []series.Reading{qh(0, 0, version(2)), qh(0, 0, version(1))}, nil, 1, "follows version"},
		{"version again", []series.Reading{qh(0, 0, version(2)), qh(0, 0, version(2))}, nil, 1, "follows version"},
		{"location down", []series.Reading{qh(1, 0, nil), qh(0, 0, nil)}, nil, 1, "market location"},
		{"from back", []series.Reading{qh(0, 1, nil), qh(0, 0, nil)}, nil, 1, "follows"},
		{"OBIS again", []series.Reading{qh(0, 0, nil), qh(0, 0, obis("1-1:2.29.0")), qh(0, 1, nil)}, nil, 2, "comes again"},
		{"channel again", []series.Reading{qh(0, 0, channel("A")), qh(0, 0, channel("B")), qh(0, 0, channel("A"))}, nil, 2, "come again"},
		{"partition back", []series.Reading{feb(0), qh(0, 0, nil)}, nil, 1, "partition before"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := newKeyOrder(tab)
			for i := range tc.rows {
				same, reason := o.next(&tc.rows[i])
				if i == tc.bad {
					if !strings.Contains(reason, tc.says) {
						t.Fatalf("reading %d: reason %q, want one saying %q", i, reason, tc.says)
					}
					return
				}
				if reason != "" {
					t.Fatalf("reading %d refused: %s", i, reason)
				}
				if tc.same != nil && same != tc.same[i] {
					t.Fatalf("reading %d: same key %v, want %v", i, same, tc.same[i])
				}
			}
			if tc.bad >= 0 {
				t.Fatalf("reading %d was not refused", tc.bad)
			}
		})
	}
}

// sameKinds reports whether got holds the kinds want, in any order.
func sameKinds(got []FileKind, want ...FileKind) bool {
	return slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want)))
}

// TestOldTableGainsSuperseded: a table created before the superseded
// column gains it and its partition field at Ensure, and its next archival
// keeps superseded versions apart.
func TestOldTableGainsSuperseded(t *testing.T) {
	e := newEnv(t, Options{})
	tab := loadProfile("power")
	var old []iceberg.NestedField
	for _, f := range Schema(tab).Fields() {
		if f.Name != series.ColumnSuperseded {
			old = append(old, f)
		}
	}
	sc := iceberg.NewSchema(0, old...)
	from, _ := sc.FindFieldByName("from")
	ch, _ := sc.FindFieldByName("channel")
	spec := iceberg.NewPartitionSpec(
		iceberg.PartitionField{SourceIDs: []int{from.ID}, FieldID: 1000, Name: "from_month", Transform: iceberg.MonthTransform{}},
		iceberg.PartitionField{SourceIDs: []int{ch.ID}, FieldID: 1001, Name: "channel", Transform: iceberg.IdentityTransform{}})
	if err := e.foreign.CreateNamespace(t.Context(), table.Identifier{DefaultNamespace}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := e.foreign.CreateTable(t.Context(), table.Identifier{DefaultNamespace, tab.Name}, sc,
		catalog.WithPartitionSpec(&spec), catalog.WithProperties(iceberg.Properties{table.PropertyFormatVersion: "2"})); err != nil {
		t.Fatal(err)
	}
	h := e.ensure(t, tab)
	ice, err := e.tier.Iceberg(t.Context(), h)
	if err != nil {
		t.Fatal(err)
	}
	sup, ok := ice.Schema().FindFieldByName(series.ColumnSuperseded)
	if !ok {
		t.Fatal("Ensure did not add the superseded column")
	}
	got := ice.Spec()
	if n := got.NumFields(); n != 3 || got.Field(2).SourceID() != sup.ID {
		t.Fatalf("partition spec %v: want superseded added", got)
	}
	a, b := quarterHour(0, jan2026, 0), quarterHour(0, jan2026, 0)
	b.Version, b.Value = a.Version+1, a.Value+1
	e.archive(t, h, jan2026, feb2026, []series.Reading{a, b})
	p, err := e.tier.Plan(t.Context(), h, series.Range{})
	if err != nil {
		t.Fatal(err)
	}
	if !sameKinds(p.Kinds, Current, Superseded) {
		t.Fatalf("kinds %v, want one current and one superseded file", p.Kinds)
	}
}

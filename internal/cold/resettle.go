package cold

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/meterstore/meterstore/series"
)

// DefaultResettleRows is CompactOptions.ResettleRows when it is zero: the
// readings of one partition a compaction holds in memory to decide their
// superseded marks again, some 250 bytes each.
const DefaultResettleRows = 250_000

// A settleUnit is what re-marking decides at once: the files of one month
// and one tuple of identity columns, every partition of the superseded
// column together, for all versions of a merge key lie in it.
type settleUnit struct {
	files []iceberg.DataFile
	rows  int64
	open  bool // some file is Open: late corrections nobody decided
}

// settleUnits returns the files of the units of g that hold late
// corrections and can be re-marked: in the table's current partition spec,
// of at most limit rows, none of whose files holds a value in a column t
// does not declare (the rows are re-encoded from readings, which carry the
// declared columns only).
func settleUnits(t *Table, ice *table.Table, g *fileGroups, limit int64) []iceberg.DataFile {
	sc := ice.Schema()
	declared := Schema(&t.decl)
	var undeclared []int
	for _, f := range sc.Fields() {
		if _, ok := declared.FindFieldByName(f.Name); !ok {
			undeclared = append(undeclared, f.ID)
		}
	}
	supCol, ok := sc.FindFieldByName(series.ColumnSuperseded)
	if !ok {
		return nil
	}
	spec := ice.Spec()
	supField := -1
	for _, f := range spec.Fields() {
		if f.SourceID() == supCol.ID {
			supField = f.FieldID
		}
	}
	if supField < 0 {
		return nil
	}
	units := map[string]*settleUnit{}
	var order []string
	bad := map[string]bool{}
	for _, k := range g.order {
		for _, f := range g.parts[k] {
			key := unitKey(f, supField)
			u := units[key]
			if u == nil {
				u = &settleUnit{}
				units[key] = u
				order = append(order, key)
			}
			if int(f.SpecID()) != spec.ID() || slices.ContainsFunc(undeclared, func(id int) bool { return holdsValues(f, id) }) {
				bad[key] = true
			}
			u.files = append(u.files, f)
			u.rows += f.Count()
			u.open = u.open || kindOf(f, supCol.ID) == Open
		}
	}
	var out []iceberg.DataFile
	for _, key := range order {
		if u := units[key]; u.open && !bad[key] && u.rows <= limit {
			out = append(out, u.files...)
		}
	}
	return out
}

// holdsValues reports whether data file f may hold a non-null value in the
// column with field id: its metrics say so, or say nothing of the file.
func holdsValues(f iceberg.DataFile, id int) bool {
	counts := f.ValueCounts()
	if len(counts) == 0 {
		return true
	}
	values, ok := counts[id]
	if !ok {
		return false // a file written without the column
	}
	nulls, ok := f.NullValueCounts()[id]
	return !ok || values > nulls
}

// unitKey names the settle unit of f: its spec and its partition values
// but the superseded one.
func unitKey(f iceberg.DataFile, supField int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "spec=%d", f.SpecID())
	p := f.Partition()
	for _, id := range slices.Sorted(maps.Keys(p)) {
		if id != supField {
			fmt.Fprintf(&b, "/%d=%#v", id, p[id])
		}
	}
	return b.String()
}

// resettled reads the rows of the files tasks plan, and returns them in the
// order an archival writes them, with an encoder that marks them again.
func (c *Tier) resettled(ctx context.Context, t *Table, ice *table.Table, scan *table.Scan, tasks []table.FileScanTask) (*records, error) {
	_, batches, err := scan.ReadTasks(ctx, tasks)
	if err != nil {
		return nil, err
	}
	d := &decoder{decl: &t.decl}
	var rows []series.Reading
	var rerr error
	for rec, err := range batches {
		if err != nil {
			return nil, err
		}
		d.each(rec, func(r series.Reading, err error) bool {
			if err != nil {
				rerr = err
				return false
			}
			rows = append(rows, r)
			return true
		})
		if rerr != nil {
			return nil, rerr
		}
	}
	// The order keyOrder asks for: hot partition, market location, OBIS
	// code, from, identity columns, version.
	ident := func(r *series.Reading) string {
		var b strings.Builder
		for _, col := range t.decl.Columns {
			if col.Identity {
				b.WriteString(r.Extra[col.Name])
				b.WriteByte(0)
			}
		}
		return b.String()
	}
	slices.SortFunc(rows, func(a, b series.Reading) int {
		return cmp.Or(
			t.decl.Width.Start(a.From).Compare(t.decl.Width.Start(b.From)),
			strings.Compare(a.MaLo, b.MaLo),
			strings.Compare(a.OBIS, b.OBIS),
			a.From.Compare(b.From),
			strings.Compare(ident(&a), ident(&b)),
			cmp.Compare(a.Version, b.Version),
		)
	})
	enc, err := newEncoder(&t.decl, c.cal, "compact", ice.Schema(), c.opts.BatchRows)
	if err != nil {
		return nil, err
	}
	enc.mark, enc.order = true, newKeyOrder(&t.decl)
	return &records{schema: enc.schema, batches: enc.batches(Readings(rows), nil), enc: enc}, nil
}

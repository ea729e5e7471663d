package cold

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/meterstore/meterstore/series"
)

// CheckDrift compares the schema t declares with the one its cold table has,
// by column name, as an encoder writes and an engine queries. It returns a
// *QuarantineError if the cold table cannot take the declared rows safely,
// by the rule series.Evolve states for declarations:
//   - a column required on one side and absent on the other (a NOT NULL
//     column added, or a required column dropped; declaring or undeclaring
//     an identity column is one of the two);
//   - a column required on one side and nullable on the other (an
//     attribute column made an identity column, or the reverse);
//   - a type that changed, except a decimal whose precision widened at the
//     same scale and an integer that widened to a long;
//   - a schema that cannot be read.
//
// Nullable columns may be added; none is ever dropped. Before it writes,
// the Tier adds a declared one the table lacks, and keeps one the
// declaration does not have (a replica on an older declaration, a column a
// foreign tool added): files written without it read NULL there, and the
// values others wrote stay readable. A column declared again after it was
// dropped (by an older MeterStore, or a foreign tool) gets its former
// field back when a former schema has it with a type the declaration
// takes, so its archived values read again. A rename is an add, and
// passes for nullable columns only.
func (c *Tier) CheckDrift(ctx context.Context, t *series.Table) error {
	if err := t.Validate(); err != nil {
		return err
	}
	ice, err := c.load(ctx, c.Handle(t))
	if errors.Is(err, icecatalog.ErrNoSuchTable) {
		return fmt.Errorf("cold: check drift of %s: %w", t.Name, err)
	}
	if err != nil {
		return &QuarantineError{Table: t.Name, Reasons: []string{"the cold table's schema cannot be read"}, Err: err}
	}
	_, _, err = drift(t, ice.Metadata())
	return err
}

// drift compares the declared schema of t with the current schema of meta.
// It returns the declared nullable columns meta lacks and the nullable
// columns of meta t does not declare, which stay.
func drift(t *series.Table, meta table.Metadata) (add, undeclared []iceberg.NestedField, err error) {
	have := meta.CurrentSchema()
	if have == nil {
		return nil, nil, &QuarantineError{Table: t.Name, Reasons: []string{"the cold table's schema cannot be read"},
			Err: errors.New("the metadata has no current schema")}
	}
	add, undeclared, reasons := compareSchemas(Schema(t), have)
	if len(reasons) > 0 {
		return nil, nil, &QuarantineError{Table: t.Name, Reasons: reasons}
	}
	return add, undeclared, nil
}

// compareSchemas applies the drift rules to a wanted (declared) and an
// existing (cold) schema. It returns the wanted nullable columns missing
// from have, the nullable columns of have not wanted, and one reason per
// unsafe difference. For the columns a declaration can express its
// verdict is series.Evolve's (TestEvolveAgrees).
func compareSchemas(want, have *iceberg.Schema) (add, undeclared []iceberg.NestedField, reasons []string) {
	for _, w := range want.Fields() {
		h, ok := have.FindFieldByName(w.Name)
		switch {
		case !ok && w.Required:
			reasons = append(reasons, fmt.Sprintf("column %q is declared NOT NULL and missing from the cold table: adding a NOT NULL column is not safe", w.Name))
		case !ok:
			add = append(add, w)
		case h.Required && !w.Required:
			reasons = append(reasons, fmt.Sprintf("column %q is NOT NULL in the cold table and nullable in the declaration", w.Name))
		case !h.Required && w.Required:
			reasons = append(reasons, fmt.Sprintf("column %q is declared NOT NULL and nullable in the cold table: making a column required is not safe", w.Name))
		default:
			if r := compareTypes(w.Name, w.Type, h.Type); r != "" {
				reasons = append(reasons, r)
			}
		}
	}
	for _, h := range have.Fields() {
		if _, ok := want.FindFieldByName(h.Name); ok {
			continue
		}
		if h.Required {
			reasons = append(reasons, fmt.Sprintf("column %q is NOT NULL in the cold table and not declared: dropping a required column is not safe", h.Name))
		} else {
			undeclared = append(undeclared, h)
		}
	}
	return add, undeclared, reasons
}

// compareTypes says why the declared type want cannot be written into a
// cold column of type have, or returns "".
func compareTypes(name string, want, have iceberg.Type) string {
	if want.Equals(have) {
		return ""
	}
	wd, wok := want.(iceberg.DecimalType)
	hd, hok := have.(iceberg.DecimalType)
	switch {
	case wok && hok && wd.Scale() != hd.Scale():
		return fmt.Sprintf("column %q: decimal scale %d in the cold table, %d declared: a changed scale reinterprets every stored value by a power of ten",
			name, hd.Scale(), wd.Scale())
	case wok && hok && hd.Precision() >= wd.Precision():
		return "" // widened precision holds every declared value
	case wok && hok:
		return fmt.Sprintf("column %q: decimal precision %d in the cold table, %d declared: it was narrowed", name, hd.Precision(), wd.Precision())
	case want.Equals(iceberg.PrimitiveTypes.Int32) && have.Equals(iceberg.PrimitiveTypes.Int64):
		return ""
	}
	return fmt.Sprintf("column %q: type %s in the cold table, %s declared", name, have, want)
}

// prepare runs the drift check before a write and adds the declared
// columns the table lacks (evolveColumns), so that no declared value is
// dropped on the way into the tier, and adds the superseded partition
// field a table created before it lacks. It returns the table to write to.
func (c *Tier) prepare(ctx context.Context, h *Table, ice *table.Table) (*table.Table, error) {
	ice, err := c.evolveColumns(ctx, h, ice)
	if err != nil {
		return nil, err
	}
	return c.partitionSuperseded(ctx, h, ice)
}

// partitionSuperseded adds identity(superseded) to the partition spec of a
// table created before it had it, so that new files keep superseded
// versions apart; files written before stay as they are.
func (c *Tier) partitionSuperseded(ctx context.Context, h *Table, ice *table.Table) (*table.Table, error) {
	sup, ok := ice.Schema().FindFieldByName(series.ColumnSuperseded)
	if !ok {
		return ice, nil // a quarantined table's schema; nothing is written to it
	}
	spec := ice.Spec()
	for _, f := range spec.Fields() {
		if f.SourceID() == sup.ID {
			return ice, nil
		}
	}
	tx := ice.NewTransaction()
	if err := tx.UpdateSpec(true).AddIdentity(series.ColumnSuperseded).Commit(); err != nil {
		return nil, fmt.Errorf("cold: %s: partition by %s: %w", h.decl.Name, series.ColumnSuperseded, err)
	}
	next, err := tx.Commit(ctx)
	if err != nil {
		return nil, fmt.Errorf("cold: %s: partition by %s: %w", h.decl.Name, series.ColumnSuperseded, err)
	}
	c.log.Info("cold: superseded versions are kept apart from now on", "table", h.decl.Name)
	return next, nil
}

// evolveColumns adds the declared nullable columns the table lacks, in one
// metadata-only commit that creates no snapshot and so leaves the
// watermark as it is. A column a former schema had under that name, with
// a field id the current one does not use and a type the declaration
// takes, is added back with that field, so the values files hold under it
// read again; any other is a new field. No column is dropped: see
// CheckDrift.
func (c *Tier) evolveColumns(ctx context.Context, h *Table, ice *table.Table) (*table.Table, error) {
	for attempt := 1; ; attempt++ {
		add, _, err := drift(&h.decl, ice.Metadata())
		if err != nil || len(add) == 0 {
			return ice, err
		}
		meta := ice.Metadata()
		cur := meta.CurrentSchema()
		fields := cur.Fields()
		next := meta.LastColumnID()
		var restored, added []string
		for _, w := range add {
			if f, ok := formerField(meta, cur, w); ok {
				fields = append(fields, f)
				restored = append(restored, f.Name)
				continue
			}
			next++
			w.ID, w.Required = next, false
			fields = append(fields, w)
			added = append(added, w.Name)
		}
		err = c.commitSchema(ctx, h, meta, fields)
		if err == nil {
			c.log.Info("cold: schema evolved as declared", "table", h.decl.Name, "added", added, "restored", restored)
			return c.load(ctx, h)
		}
		// Another process evolved the schema first: compare again.
		if !errors.Is(err, table.ErrCommitFailed) || attempt == evolveAttempts {
			return nil, fmt.Errorf("cold: %s: evolve the schema: %w", h.decl.Name, err)
		}
		if ice, err = c.load(ctx, h); err != nil {
			return nil, err
		}
	}
}

// commitSchema makes fields the current schema of table h, at meta, in a
// metadata-only commit that fails if the schema or its last field id
// changed since meta.
func (c *Tier) commitSchema(ctx context.Context, h *Table, meta table.Metadata, fields []iceberg.NestedField) error {
	cur := meta.CurrentSchema()
	sc := iceberg.NewSchemaWithIdentifiers(cur.ID, cur.IdentifierFieldIDs, fields...)
	reqs := []table.Requirement{table.AssertTableUUID(meta.TableUUID()),
		table.AssertCurrentSchemaID(cur.ID), table.AssertLastAssignedFieldID(meta.LastColumnID())}
	updates := []table.Update{table.NewAddSchemaUpdate(sc), table.NewSetCurrentSchemaUpdate(-1)}
	_, _, err := c.cat.CommitTable(ctx, h.ident, reqs, updates)
	return err
}

// evolveAttempts bounds how often evolveColumns compares and commits again
// after another commit changed the schema first.
const evolveAttempts = 3

// formerField returns the field of the newest former schema of meta named
// as w, if the current schema cur uses neither its name nor its id and its
// type takes w's values: the column w declares again.
func formerField(meta table.Metadata, cur *iceberg.Schema, w iceberg.NestedField) (iceberg.NestedField, bool) {
	schemas := meta.Schemas()
	for i := len(schemas) - 1; i >= 0; i-- {
		f, ok := schemas[i].FindFieldByName(w.Name)
		if !ok {
			continue
		}
		if _, used := cur.FindFieldByID(f.ID); used || compareTypes(w.Name, w.Type, f.Type) != "" {
			return iceberg.NestedField{}, false
		}
		f.Required = false
		return f, true
	}
	return iceberg.NestedField{}, false
}

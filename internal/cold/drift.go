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
// Nullable columns may be added and dropped: before it writes, the Tier
// adds a declared one the table lacks and drops one the declaration no
// longer has, so that the cold schema follows the declaration as the hot
// one does. A rename is a drop plus an add, and passes for nullable
// columns only.
func (c *Tier) CheckDrift(ctx context.Context, t *series.Table) error {
	if err := t.Validate(); err != nil {
		return err
	}
	ice, err := c.cat.LoadTable(ctx, table.Identifier{c.opts.Namespace, t.Name})
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
// columns of meta t does not declare.
func drift(t *series.Table, meta table.Metadata) (add, drop []iceberg.NestedField, err error) {
	have := meta.CurrentSchema()
	if have == nil {
		return nil, nil, &QuarantineError{Table: t.Name, Reasons: []string{"the cold table's schema cannot be read"},
			Err: errors.New("the metadata has no current schema")}
	}
	add, drop, reasons := compareSchemas(Schema(t), have)
	if len(reasons) > 0 {
		return nil, nil, &QuarantineError{Table: t.Name, Reasons: reasons}
	}
	return add, drop, nil
}

// compareSchemas applies the drift rules to a wanted (declared) and an
// existing (cold) schema. It returns the wanted nullable columns missing
// from have, the nullable columns of have not wanted, and one reason per
// unsafe difference. For the columns a declaration can express its
// verdict is series.Evolve's (TestEvolveAgrees).
func compareSchemas(want, have *iceberg.Schema) (add, drop []iceberg.NestedField, reasons []string) {
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
			drop = append(drop, h)
		}
	}
	return add, drop, reasons
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

// prepare runs the drift check before a write and evolves the table's
// schema to the declaration (evolveColumns), so that no declared value is
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

// evolveColumns adds the declared nullable columns the table lacks and
// drops the nullable columns it no longer declares, in one metadata-only
// commit that creates no snapshot and so leaves the watermark as it is.
// Dropping a column removes it from the current schema only: the files
// and older schemas keep its values, so time travel still reads them.
func (c *Tier) evolveColumns(ctx context.Context, h *Table, ice *table.Table) (*table.Table, error) {
	add, drop, err := drift(&h.decl, ice.Metadata())
	if err != nil || len(add)+len(drop) == 0 {
		return ice, err
	}
	tx := ice.NewTransaction()
	up := tx.UpdateSchema(true, false)
	for _, f := range drop {
		up.DeleteColumn([]string{f.Name})
	}
	for _, f := range add {
		up.AddColumn([]string{f.Name}, f.Type, f.Doc, false, nil)
	}
	if err := up.Commit(); err != nil {
		return nil, fmt.Errorf("cold: %s: evolve the schema: %w", h.decl.Name, err)
	}
	next, err := tx.Commit(ctx)
	if err != nil {
		return nil, fmt.Errorf("cold: %s: evolve the schema: %w", h.decl.Name, err)
	}
	c.log.Info("cold: schema evolved as declared", "table", h.decl.Name, "added", fieldNames(add), "dropped", fieldNames(drop))
	return next, nil
}

func fieldNames(fs []iceberg.NestedField) []string {
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.Name
	}
	return names
}

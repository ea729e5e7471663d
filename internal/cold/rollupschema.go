package cold

import (
	"context"
	"fmt"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/meterstore/meterstore/internal/rollup"
	"github.com/meterstore/meterstore/series"
)

// A rollup written by an earlier release lacks columns the rollup's schema
// has since (on_grid): its files cannot answer daily, whose reader would
// take a missing column as NULL. A reader takes such a snapshot for no
// rollup and computes the days from the readings, which is exact; the next
// catch-up adds the columns to the table's schema and rewrites every day
// (see CatchUpRollup).

// rollupLacks returns the columns of decl's rollup schema that sc has not.
func rollupLacks(decl *series.Table, sc *iceberg.Schema) []iceberg.NestedField {
	var out []iceberg.NestedField
	for _, f := range rollup.Schema(decl).Fields() {
		if _, ok := sc.FindFieldByName(f.Name); !ok {
			out = append(out, f)
		}
	}
	return out
}

// rollupAnswers reports whether snapshot s of the rollup table of decl,
// at ice, was written with every column of the rollup's schema; without
// a snapshot, whether the current schema has them.
func rollupAnswers(decl *series.Table, ice *table.Table, s *table.Snapshot) bool {
	meta := ice.Metadata()
	sc := meta.CurrentSchema()
	if s != nil && s.SchemaID != nil {
		sc = nil
		for _, x := range meta.Schemas() {
			if x.ID == *s.SchemaID {
				sc = x
			}
		}
		if sc == nil {
			return false
		}
	}
	return len(rollupLacks(decl, sc)) == 0
}

// evolveRollup adds the columns of the rollup's schema that rollup table
// r, at ice, lacks, as new nullable fields, in one metadata-only commit
// (as evolveColumns does a table's), and returns the table after it. A
// concurrent change of the schema fails it; the next catch-up repeats it.
func (c *Tier) evolveRollup(ctx context.Context, r *Table, ice *table.Table) (*table.Table, error) {
	lack := rollupLacks(&r.decl, ice.Schema())
	if len(lack) == 0 {
		return ice, nil
	}
	meta := ice.Metadata()
	fields := meta.CurrentSchema().Fields()
	next := meta.LastColumnID()
	var added []string
	for _, f := range lack {
		next++
		f.ID, f.Required = next, false
		fields = append(fields, f)
		added = append(added, f.Name)
	}
	if err := c.commitSchema(ctx, r, meta, fields); err != nil {
		return nil, fmt.Errorf("cold: %s: add the rollup's columns %v: %w", r.decl.Name, added, err)
	}
	c.log.Info("cold: the rollup's schema evolved; every day is computed again", "table", r.decl.Name, "added", added)
	return c.load(ctx, r)
}

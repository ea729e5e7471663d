package cold

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/meterstore/meterstore/series"
)

// Ensure creates the Iceberg table of t unless it exists, and returns its
// handle. It verifies that the table is in format version 2, sets the write
// properties from the Tier's options, and compares the schemas: nullable
// columns the declaration has and the table lacks are added, and nullable
// ones the table has and the declaration lacks stay (see CheckDrift). If
// the table's schema cannot take the declared rows, Ensure returns the handle
// together with a *QuarantineError: scans work, archiving is refused.
func (c *Tier) Ensure(ctx context.Context, t *series.Table) (*Table, error) {
	return c.ensure(ctx, t, false)
}

// EnsureExisting is Ensure for a table that was archived into before: one
// the catalog does not find is not created afresh, which would start it
// over empty below a watermark its rows were archived under, but refused
// with an error wrapping ErrUnreachable and catalog.ErrNoSuchTable: the
// warehouse, or its catalog's log, is away or lost.
func (c *Tier) EnsureExisting(ctx context.Context, t *series.Table) (*Table, error) {
	return c.ensure(ctx, t, true)
}

// Handle returns the handle of declared table t without reading or
// writing anything: for a table that runs on its hot tier alone while
// its cold tier cannot be ensured. Every operation through it reads the
// table anew, and fails while the cold tier cannot be read.
func (c *Tier) Handle(t *series.Table) *Table {
	return &Table{decl: *cloneDecl(t), ident: table.Identifier{c.opts.Namespace, t.Name}}
}

func (c *Tier) ensure(ctx context.Context, t *series.Table, existing bool) (*Table, error) {
	if err := t.Validate(); err != nil {
		return nil, err
	}
	h := c.Handle(t)
	if err := c.ensureNamespace(ctx, existing); err != nil {
		return nil, err
	}
	ice, err := c.load(ctx, h)
	switch {
	case errors.Is(err, icecatalog.ErrNoSuchTable) && existing:
		return nil, fmt.Errorf("cold: ensure %s: %w: the archival ledger records windows archived into the table, and the catalog does not find it (the warehouse or the catalog's log is away, or lost): %w",
			t.Name, ErrUnreachable, err)
	case errors.Is(err, icecatalog.ErrNoSuchTable):
		ice, err = c.create(ctx, h)
	}
	if err != nil {
		return nil, fmt.Errorf("cold: ensure %s: %w", t.Name, err)
	}
	if v := ice.Metadata().Version(); v != 2 {
		return nil, fmt.Errorf("cold: ensure %s: the table has format version %d, want 2", t.Name, v)
	}
	if ice, err = c.setProperties(ctx, h, ice); err != nil {
		return nil, err
	}
	if _, err := c.prepare(ctx, h, ice); err != nil {
		var q *QuarantineError
		if errors.As(err, &q) {
			return h, err
		}
		return nil, err
	}
	return h, nil
}

func (c *Tier) ensureNamespace(ctx context.Context, existing bool) error {
	ns := table.Identifier{c.opts.Namespace}
	ok, err := c.cat.CheckNamespaceExists(ctx, ns)
	if err != nil {
		return fmt.Errorf("cold: namespace %s: %w", c.opts.Namespace, err)
	}
	if ok {
		return nil
	}
	if existing {
		return fmt.Errorf("cold: namespace %s: %w: a table archived into before is in it, and the catalog does not find it (the warehouse or the catalog's log is away, or lost): %w",
			c.opts.Namespace, ErrUnreachable, icecatalog.ErrNoSuchNamespace)
	}
	err = c.cat.CreateNamespace(ctx, ns, iceberg.Properties{"owner": "meterstore"})
	if err != nil && !errors.Is(err, icecatalog.ErrNamespaceAlreadyExists) {
		return fmt.Errorf("cold: create namespace %s: %w", c.opts.Namespace, err)
	}
	return nil
}

func (c *Tier) create(ctx context.Context, h *Table) (*table.Table, error) {
	sc := Schema(&h.decl)
	spec, err := partitionSpec(&h.decl, sc)
	if err != nil {
		return nil, err
	}
	order, err := sortOrder(sc)
	if err != nil {
		return nil, err
	}
	props := c.opts.writeProperties(&h.decl)
	props[table.PropertyFormatVersion] = "2"
	ice, err := c.cat.CreateTable(ctx, h.ident, sc,
		icecatalog.WithPartitionSpec(&spec), icecatalog.WithSortOrder(order), icecatalog.WithProperties(props))
	if errors.Is(err, icecatalog.ErrTableAlreadyExists) {
		return c.cat.LoadTable(ctx, h.ident) // a concurrent Ensure came first
	}
	if err == nil {
		c.log.Info("cold: table created", "table", h.decl.Name, "location", ice.Location())
	}
	return ice, err
}

// setProperties brings the write properties in line with the options, and
// removes droppedProperties, in a metadata-only commit, if they differ.
func (c *Tier) setProperties(ctx context.Context, h *Table, ice *table.Table) (*table.Table, error) {
	want := c.opts.writeProperties(&h.decl)
	have := ice.Properties()
	diff := iceberg.Properties{}
	for k, v := range want {
		if have[k] != v {
			diff[k] = v
		}
	}
	var drop []string
	for k, v := range droppedProperties {
		if have[k] == v {
			drop = append(drop, k)
		}
	}
	if len(diff) == 0 && len(drop) == 0 {
		return ice, nil
	}
	tx := ice.NewTransaction()
	if len(diff) > 0 {
		if err := tx.SetProperties(diff); err != nil {
			return nil, fmt.Errorf("cold: ensure %s: set properties: %w", h.decl.Name, err)
		}
	}
	if len(drop) > 0 {
		if err := tx.RemoveProperties(drop); err != nil {
			return nil, fmt.Errorf("cold: ensure %s: remove properties: %w", h.decl.Name, err)
		}
	}
	next, err := tx.Commit(ctx)
	if err != nil {
		return nil, fmt.Errorf("cold: ensure %s: set properties %v: %w", h.decl.Name, slices.Sorted(maps.Keys(diff)), err)
	}
	return next, nil
}

package catalog

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// Guard returns cat with check run on every table commit, for a catalog
// whose commit MeterStore does not implement (iceberg-go's SQL catalog, an
// Iceberg REST catalog). A commit is validated against the table's current
// metadata, check sees that metadata and the metadata the commit would
// install, and the commit is then sent on pinned to the current snapshot of
// the main branch, so a commit that lands is one the check passed against
// the snapshot it replaced. A commit that loses a race fails with
// table.ErrCommitFailed, also where the catalog reports the failed pin
// otherwise, so that iceberg-go's retry replays it onto the new base
// through the guard again, checked afresh. Tables that the guarded
// catalog loads, creates or renames commit through it too.
//
// MeterStore's own Catalog runs its Options.Check inside the log's
// compare-and-set and needs no guard.
func Guard(cat icecatalog.Catalog, check CommitCheck) icecatalog.Catalog {
	if check == nil {
		return cat
	}
	return &guarded{Catalog: cat, check: check}
}

type guarded struct {
	icecatalog.Catalog
	check CommitCheck
}

// CommitTable checks the commit against the current metadata, then sends
// it on with the current snapshot as a requirement.
func (g *guarded) CommitTable(ctx context.Context, ident table.Identifier, reqs []table.Requirement, updates []table.Update) (table.Metadata, string, error) {
	cur, err := g.Catalog.LoadTable(ctx, ident)
	switch {
	case errors.Is(err, icecatalog.ErrNoSuchTable):
		// A commit that creates the table replaces nothing to check
		// against; the catalog refuses it if the table appears meanwhile.
		return g.Catalog.CommitTable(ctx, ident, reqs, updates)
	case err != nil:
		return nil, "", err
	}
	base := cur.Metadata()
	for _, r := range reqs {
		if err := r.Validate(base); err != nil {
			return nil, "", fmt.Errorf("%w: %v: %w", table.ErrCommitFailed, ident, err)
		}
	}
	next, err := table.UpdateTableMetadata(base, updates, cur.MetadataLocation())
	if err != nil {
		return nil, "", fmt.Errorf("catalog: commit %v: %w", ident, err)
	}
	if err := g.check(ident, base, next); err != nil {
		return nil, "", fmt.Errorf("%w: %w", table.ErrCommitFailed, err)
	}
	var pin *int64
	if s := base.CurrentSnapshot(); s != nil {
		id := s.SnapshotID
		pin = &id
	}
	reqs = append(reqs[:len(reqs):len(reqs)], table.AssertRefSnapshotID(table.MainBranch, pin))
	md, loc, err := g.Catalog.CommitTable(ctx, ident, reqs, updates)
	if err != nil && !errors.Is(err, table.ErrCommitFailed) && strings.HasPrefix(err.Error(), requirementFailed) {
		// iceberg-go's SQL catalog returns a requirement that failed
		// against the table it read as is, before writing anything: a
		// lost race like any other, which iceberg-go retries on a fresh
		// base (and this guard checks again) only as ErrCommitFailed.
		err = fmt.Errorf("%w: %v: %w", table.ErrCommitFailed, ident, err)
	}
	return md, loc, err
}

// requirementFailed begins the error of every table.Requirement whose
// validation fails.
const requirementFailed = "requirement failed:"

// LoadTable returns the table with the guarded catalog as its CatalogIO.
func (g *guarded) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	return g.wrap(g.Catalog.LoadTable(ctx, ident))
}

// CreateTable creates the table and returns it with the guarded catalog as
// its CatalogIO.
func (g *guarded) CreateTable(ctx context.Context, ident table.Identifier, sc *iceberg.Schema, opts ...icecatalog.CreateTableOpt) (*table.Table, error) {
	return g.wrap(g.Catalog.CreateTable(ctx, ident, sc, opts...))
}

// RenameTable renames the table and returns it with the guarded catalog as
// its CatalogIO.
func (g *guarded) RenameTable(ctx context.Context, from, to table.Identifier) (*table.Table, error) {
	return g.wrap(g.Catalog.RenameTable(ctx, from, to))
}

func (g *guarded) wrap(t *table.Table, err error) (*table.Table, error) {
	if err != nil {
		return nil, err
	}
	fs := func(ctx context.Context) (iceio.IO, error) { return t.FS(ctx) }
	return table.New(t.Identifier(), t.Metadata(), t.MetadataLocation(), fs, g), nil
}

// Guarded reports whether commits through cat run a CommitCheck: cat is
// a Catalog with Options.Check set, or a catalog Guard returned.
func Guarded(cat icecatalog.Catalog) bool {
	switch c := cat.(type) {
	case *Catalog:
		return c.check != nil
	case *guarded:
		return true
	}
	return false
}

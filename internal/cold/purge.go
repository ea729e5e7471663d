package cold

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"strings"

	icecatalog "github.com/apache/iceberg-go/catalog"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/meterstore/meterstore/internal/rollup"
	"github.com/meterstore/meterstore/series"
)

// Purge destroys the cold table name: every file under its location and
// its catalog entry. It is the only operation of the tier that deletes
// readings, and there is no way back, so confirm must repeat the name. It
// returns the number of files deleted; a table that is gone is an error
// matching catalog.ErrNoSuchTable.
//
// The files go first, the current metadata file last, and the catalog
// entry after them, so that a purge cut short at any step is finished by
// running it again: until the entry is dropped the table still loads (its
// metadata file is the last to go) and names its location, and an entry
// whose metadata file is gone is one a purge emptied, which the rerun
// drops. Dropping first would leave files no rerun can find.
//
// The table's daily rollup (see CatchUpRollup), which sums its readings,
// is purged first, the same way: a purge cut short between the two leaves
// the table, and a rerun purges the rollup a cycle may have begun again.
func (c *Tier) Purge(ctx context.Context, name, confirm string) (int, error) {
	if name == "" || confirm != name {
		return 0, fmt.Errorf("cold: purge %q: %w", name, series.ErrNotConfirmed)
	}
	n, err := c.purge(ctx, table.Identifier{rollup.Namespace(c.opts.Namespace), name})
	if err != nil && !errors.Is(err, icecatalog.ErrNoSuchTable) && !errors.Is(err, icecatalog.ErrNoSuchNamespace) {
		return n, fmt.Errorf("cold: purge the rollup of %s: %w", name, err)
	}
	m, err := c.purge(ctx, table.Identifier{c.opts.Namespace, name})
	return n + m, err
}

// purge destroys the table ident as Purge describes.
func (c *Tier) purge(ctx context.Context, ident table.Identifier) (int, error) {
	name := ident[len(ident)-1]
	ice, err := c.cat.LoadTable(ctx, ident)
	if errors.Is(err, iofs.ErrNotExist) && !errors.Is(err, icecatalog.ErrNoSuchTable) {
		// A purge deleted the metadata file and stopped before the drop.
		c.log.Warn("cold: the table's metadata file is gone; dropping its entry, as a purge cut short leaves it", "table", name, "err", err)
		return 0, c.dropPurged(ctx, ident)
	}
	if err != nil {
		return 0, fmt.Errorf("cold: purge %s: %w", name, err)
	}
	fs, err := ice.FS(ctx)
	if err != nil {
		return 0, fmt.Errorf("cold: purge %s: file IO: %w", name, err)
	}
	files, err := tableFiles(ctx, ice, fs)
	if err != nil {
		return 0, fmt.Errorf("cold: purge %s: %w", name, err)
	}
	n := 0
	for _, f := range files {
		if c.purgeStep != nil {
			if err := c.purgeStep(f); err != nil {
				return n, fmt.Errorf("cold: purge %s: %w", name, err)
			}
		}
		if err := fs.Remove(f); err != nil && !errors.Is(err, iofs.ErrNotExist) {
			// Stop rather than go on: the metadata file must outlive
			// every file it leads a rerun to.
			return n, fmt.Errorf("cold: purge %s: %d files deleted, then: %w", name, n, err)
		}
		n++
	}
	if c.purgeStep != nil {
		if err := c.purgeStep(""); err != nil {
			return n, fmt.Errorf("cold: purge %s: %w", name, err)
		}
	}
	if err := c.dropPurged(ctx, ident); err != nil {
		return n, err
	}
	c.log.Info("cold: table purged", "table", name, "files", n)
	return n, nil
}

// dropPurged drops the catalog entry of a table whose files are deleted; an
// entry dropped already is no error.
func (c *Tier) dropPurged(ctx context.Context, ident table.Identifier) error {
	err := c.cat.DropTable(ctx, ident)
	if err != nil && !errors.Is(err, icecatalog.ErrNoSuchTable) {
		return fmt.Errorf("cold: purge %s: files deleted, but drop: %w", ident[len(ident)-1], err)
	}
	return nil
}

// tableFiles returns every file of ice, in the order a purge deletes them,
// the current metadata file last. Where the file IO can list, that is
// everything under the table's location, files of failed commits included;
// only a location named after the table is listed, so that a table placed
// at the top of a warehouse cannot take the warehouse with it. Otherwise it
// is every file the metadata references that is still there.
func tableFiles(ctx context.Context, ice *table.Table, fs icebergio.IO) ([]string, error) {
	loc := strings.TrimSuffix(ice.Location(), "/")
	name := ice.Identifier()[len(ice.Identifier())-1]
	cur := pathKey(ice.MetadataLocation())
	if l, ok := fs.(icebergio.ListableIO); ok && ownLocation(loc, name) {
		listed, err := listFiles(l, loc)
		if err != nil {
			return nil, err
		}
		var out []string
		last := ""
		for _, f := range listed {
			if f.key == cur {
				last = f.loc
				continue
			}
			out = append(out, f.loc)
		}
		if last != "" {
			out = append(out, last)
		}
		return out, nil
	}
	r, err := collectReferences(ice.Metadata(), ice.MetadataLocation(), fs, true)
	if err != nil {
		return nil, err
	}
	return r.all(), nil
}

package catalog

import (
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"maps"
	"slices"

	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/meterstore/meterstore/consensus"
)

// registry is the catalog's directory: namespaces with their properties
// and the table names in each. It lives in a shard of its own, rewritten
// whole by compare-and-set, so listings need nothing from the log backend
// beyond the four log operations.
type registry struct {
	Namespaces map[string]nsEntry `json:"namespaces"`
}

type nsEntry struct {
	Props  iceberg.Properties `json:"props,omitempty"`
	Tables []string           `json:"tables,omitempty"`
}

// registryKeep is how many registry versions stay in its log.
const registryKeep = 64

func (c *Catalog) readRegistry(ctx context.Context) (registry, int64, error) {
	e, ok, err := c.log.Head(ctx, c.registryShard())
	if err != nil {
		return registry{}, 0, fmt.Errorf("catalog: read registry: %w", err)
	}
	r := registry{Namespaces: map[string]nsEntry{}}
	if !ok {
		return r, consensus.Empty, nil
	}
	if err := json.Unmarshal(e.Data, &r); err != nil {
		return registry{}, 0, fmt.Errorf("catalog: %w: registry entry %d: %w", consensus.ErrCorrupt, e.SeqNo, err)
	}
	if r.Namespaces == nil {
		r.Namespaces = map[string]nsEntry{}
	}
	return r, e.SeqNo, nil
}

// updateRegistry applies fn to the newest registry and commits the result,
// retrying on a concurrent update. fn returns false to leave it unchanged.
func (c *Catalog) updateRegistry(ctx context.Context, fn func(r *registry) (bool, error)) error {
	for range 100 {
		r, seq, err := c.readRegistry(ctx)
		if err != nil {
			return err
		}
		changed, err := fn(&r)
		if err != nil || !changed {
			return err
		}
		data, err := json.Marshal(r)
		if err != nil {
			return err
		}
		res, err := c.log.CompareAndSet(ctx, c.registryShard(), seq, data)
		if consensus.IsRetryable(err) || (err == nil && res == consensus.ExpectationMismatch) {
			continue
		}
		if err != nil {
			return fmt.Errorf("catalog: update registry: %w", err)
		}
		if next := seq + 1; next > 0 && next%registryKeep == 0 {
			if _, err := c.log.Truncate(ctx, c.registryShard(), next-registryKeep/2); err != nil {
				c.logger.Warn("catalog: trim registry log", "err", err)
			}
		}
		return nil
	}
	return fmt.Errorf("catalog: update registry: %w", consensus.ErrTransient)
}

func (c *Catalog) register(ctx context.Context, ns, name string, add bool) error {
	return c.updateRegistry(ctx, func(r *registry) (bool, error) {
		e, ok := r.Namespaces[ns]
		if !ok {
			if !add {
				return false, nil
			}
			return false, fmt.Errorf("%w: %s", icecatalog.ErrNoSuchNamespace, ns)
		}
		i, found := slices.BinarySearch(e.Tables, name)
		switch {
		case add && !found:
			e.Tables = slices.Insert(e.Tables, i, name)
		case !add && found:
			e.Tables = slices.Delete(e.Tables, i, i+1)
		default:
			return false, nil
		}
		r.Namespaces[ns] = e
		return true, nil
	})
}

func (c *Catalog) requireNamespace(ctx context.Context, ns string) error {
	ok, err := c.CheckNamespaceExists(ctx, table.Identifier{ns})
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: %s", icecatalog.ErrNoSuchNamespace, ns)
	}
	return nil
}

// CreateNamespace implements catalog.Catalog. Namespaces have one level.
func (c *Catalog) CreateNamespace(ctx context.Context, namespace table.Identifier, props iceberg.Properties) error {
	ns, err := validNamespace(namespace)
	if err != nil {
		return err
	}
	return c.updateRegistry(ctx, func(r *registry) (bool, error) {
		if _, ok := r.Namespaces[ns]; ok {
			return false, fmt.Errorf("%w: %s", icecatalog.ErrNamespaceAlreadyExists, ns)
		}
		r.Namespaces[ns] = nsEntry{Props: maps.Clone(props)}
		return true, nil
	})
}

// DropNamespace implements catalog.Catalog; the namespace must hold no tables.
func (c *Catalog) DropNamespace(ctx context.Context, namespace table.Identifier) error {
	ns, err := validNamespace(namespace)
	if err != nil {
		return err
	}
	live, err := c.listTables(ctx, ns)
	if err != nil {
		return err
	}
	if len(live) > 0 {
		return fmt.Errorf("%w: %s holds %d tables", icecatalog.ErrNamespaceNotEmpty, ns, len(live))
	}
	return c.updateRegistry(ctx, func(r *registry) (bool, error) {
		if _, ok := r.Namespaces[ns]; !ok {
			return false, fmt.Errorf("%w: %s", icecatalog.ErrNoSuchNamespace, ns)
		}
		delete(r.Namespaces, ns)
		return true, nil
	})
}

// CheckNamespaceExists implements catalog.Catalog.
func (c *Catalog) CheckNamespaceExists(ctx context.Context, namespace table.Identifier) (bool, error) {
	ns, err := validNamespace(namespace)
	if err != nil {
		return false, err
	}
	r, _, err := c.readRegistry(ctx)
	if err != nil {
		return false, err
	}
	_, ok := r.Namespaces[ns]
	return ok, nil
}

// ListNamespaces implements catalog.Catalog. Namespaces have no children.
func (c *Catalog) ListNamespaces(ctx context.Context, parent table.Identifier) ([]table.Identifier, error) {
	if len(parent) > 0 {
		if _, err := validNamespace(parent); err != nil {
			return nil, err
		}
		return nil, nil
	}
	r, _, err := c.readRegistry(ctx)
	if err != nil {
		return nil, err
	}
	var out []table.Identifier
	for _, ns := range slices.Sorted(maps.Keys(r.Namespaces)) {
		out = append(out, table.Identifier{ns})
	}
	return out, nil
}

// LoadNamespaceProperties implements catalog.Catalog.
func (c *Catalog) LoadNamespaceProperties(ctx context.Context, namespace table.Identifier) (iceberg.Properties, error) {
	ns, err := validNamespace(namespace)
	if err != nil {
		return nil, err
	}
	r, _, err := c.readRegistry(ctx)
	if err != nil {
		return nil, err
	}
	e, ok := r.Namespaces[ns]
	if !ok {
		return nil, fmt.Errorf("%w: %s", icecatalog.ErrNoSuchNamespace, ns)
	}
	props := iceberg.Properties{}
	maps.Copy(props, e.Props)
	return props, nil
}

// UpdateNamespaceProperties implements catalog.Catalog.
func (c *Catalog) UpdateNamespaceProperties(ctx context.Context, namespace table.Identifier, removals []string, updates iceberg.Properties) (icecatalog.PropertiesUpdateSummary, error) {
	ns, err := validNamespace(namespace)
	if err != nil {
		return icecatalog.PropertiesUpdateSummary{}, err
	}
	var sum icecatalog.PropertiesUpdateSummary
	err = c.updateRegistry(ctx, func(r *registry) (bool, error) {
		sum = icecatalog.PropertiesUpdateSummary{Removed: []string{}, Updated: []string{}, Missing: []string{}}
		e, ok := r.Namespaces[ns]
		if !ok {
			return false, fmt.Errorf("%w: %s", icecatalog.ErrNoSuchNamespace, ns)
		}
		props := iceberg.Properties{}
		maps.Copy(props, e.Props)
		for _, k := range removals {
			if _, ok := props[k]; ok {
				delete(props, k)
				sum.Removed = append(sum.Removed, k)
			} else {
				sum.Missing = append(sum.Missing, k)
			}
		}
		for k, v := range updates {
			props[k] = v
			sum.Updated = append(sum.Updated, k)
		}
		e.Props = props
		r.Namespaces[ns] = e
		return true, nil
	})
	return sum, err
}

// ListTables implements catalog.Catalog. A registered name whose log has no
// live table (a crashed create, a finished drop) is left out.
func (c *Catalog) ListTables(ctx context.Context, namespace table.Identifier) iter.Seq2[table.Identifier, error] {
	return func(yield func(table.Identifier, error) bool) {
		ns, err := validNamespace(namespace)
		if err != nil {
			yield(nil, err)
			return
		}
		names, err := c.listTables(ctx, ns)
		if err != nil {
			yield(nil, err)
			return
		}
		for _, n := range names {
			if !yield(table.Identifier{ns, n}, nil) {
				return
			}
		}
	}
}

func (c *Catalog) listTables(ctx context.Context, ns string) ([]string, error) {
	r, _, err := c.readRegistry(ctx)
	if err != nil {
		return nil, err
	}
	e, ok := r.Namespaces[ns]
	if !ok {
		return nil, fmt.Errorf("%w: %s", icecatalog.ErrNoSuchNamespace, ns)
	}
	var out []string
	for _, name := range e.Tables {
		h, ok, err := c.head(ctx, ns, name)
		if err != nil {
			return nil, fmt.Errorf("catalog: list %s: %w", ns, err)
		}
		if ok && !h.Dropped {
			out = append(out, name)
		}
	}
	return out, nil
}

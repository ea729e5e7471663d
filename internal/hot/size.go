package hot

import (
	"context"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/meterstore/meterstore/series"
)

// Size returns the rows of t's attached partitions and the bytes of its
// whole partition tree, attached and detached, indexes included, and of
// its ownership relation and dictionaries if it has them.
func (h *Tier) Size(ctx context.Context, t *series.Table) (rows, bytes int64, err error) {
	parent := h.ident(t.Name)
	info, _, err := h.declared(ctx, h.pool, t)
	if err != nil {
		return 0, 0, classify("size", t.Name, err)
	}
	// Only what the declaration says the table owns is counted: a
	// relation of a companion's name is otherwise another table's.
	var owned []string
	for _, name := range companions(t, info.integrity, info.layout) {
		owned = append(owned, h.ident(name))
	}
	err = h.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM `+parent+`),
	coalesce((SELECT sum(pg_total_relation_size(relid)) FROM pg_partition_tree($1::regclass)), 0)
	+ coalesce((SELECT sum(pg_total_relation_size(to_regclass(n))) FROM unnest($2::text[]) n), 0)`,
		parent, owned).Scan(&rows, &bytes)
	return rows, bytes, classify("size", t.Name, err)
}

// CountRows returns the number of rows of partition p, attached or
// detached.
func (h *Tier) CountRows(ctx context.Context, p Partition) (int64, error) {
	var n int64
	err := h.pool.QueryRow(ctx, `SELECT count(*) FROM `+pgx.Identifier{h.schema, p.Name}.Sanitize()).Scan(&n)
	return n, classify("count rows", p.Name, err)
}

// Floor tells where t's attached partitions vouch for its rows. detached
// is the end of the highest detached partition, zero if none is detached:
// every row at or above it is in an attached partition. attached is the
// start of the lowest attached partition above every detached one, zero if
// there is none: every row of t at or above it is in PostgreSQL.
func (h *Tier) Floor(ctx context.Context, t *series.Table) (detached, attached time.Time, err error) {
	parts, err := h.Partitions(ctx, t)
	if err != nil {
		return time.Time{}, time.Time{}, err
	}
	detached, attached = floor(parts)
	return detached, attached, nil
}

// floor walks the partitions down from the highest: the attached ones above
// the highest detached one vouch for every row at or above the lowest of
// them.
func floor(parts []Partition) (detached, attached time.Time) {
	parts = slices.Clone(parts)
	slices.SortFunc(parts, func(a, b Partition) int { return a.From.Compare(b.From) })
	for i := len(parts) - 1; i >= 0; i-- {
		if !parts[i].Attached {
			return parts[i].To, attached
		}
		attached = parts[i].From
	}
	return time.Time{}, attached
}

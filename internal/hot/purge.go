package hot

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/meterstore/meterstore/series"
)

// Purge destroys table t in PostgreSQL: the parent with every attached
// partition, the detached partitions and the declaration. It is one
// transaction under the DDL lock timeout, and purging a table that is gone
// is no error, so an interrupted purge is completed by running it again.
// confirm must repeat the name.
func (h *Tier) Purge(ctx context.Context, t *series.Table, confirm string) error {
	const op = "purge"
	if err := t.Validate(); err != nil {
		return err
	}
	if confirm != t.Name {
		return &series.Error{Kind: series.InvalidInput, Op: op, Table: t.Name, Err: series.ErrNotConfirmed}
	}
	parts, err := h.Partitions(ctx, t)
	if err != nil {
		return err
	}
	return h.ddl(ctx, op, t.Name, func(tx pgx.Tx) error {
		// Only what the declaration says the table owns is dropped: a
		// relation of a companion's name is otherwise another table's.
		info, _, err := h.declared(ctx, tx, t)
		if err != nil {
			return err
		}
		// An upgrade to IntegrityStatement under way owns its companions
		// too (upgrade.go).
		integrity := info.integrity
		if records, err := h.recordsSpans(ctx, tx, t); err != nil {
			return err
		} else if records {
			integrity = series.IntegrityStatement
		}
		for _, p := range parts {
			if p.Attached {
				continue
			}
			if _, err := tx.Exec(ctx, `DROP TABLE IF EXISTS `+h.ident(p.Name)); err != nil {
				return fmt.Errorf("drop %s: %w", p.Name, err)
			}
		}
		stmts := []string{`DROP TABLE IF EXISTS ` + h.ident(t.Name) + ` CASCADE`}
		for _, name := range companions(t, integrity, info.layout) {
			stmts = append(stmts, `DROP TABLE IF EXISTS `+h.ident(name))
		}
		if integrity == series.IntegrityStatement {
			stmts = append(stmts, `DROP FUNCTION IF EXISTS `+h.ident(checkFunc(t))+`()`)
		}
		for _, stmt := range stmts {
			if _, err := tx.Exec(ctx, stmt); err != nil {
				return err
			}
		}
		h.forget(t.Name)
		var meta bool
		if err := tx.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, h.ident(metaTable)).Scan(&meta); err != nil || !meta {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM `+h.ident(metaTable)+` WHERE name = $1`, t.Name)
		return err
	})
}

package hot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/meterstore/meterstore/series"
)

// upgradeToStatement gives a declared table of IntegrityExclusion or
// IntegrityWrite, recorded as have, IntegrityStatement in tx: the
// ownership relation filled from the stored rows, the statement triggers
// on the parent and the attached partitions, and no GiST exclusion
// constraints. The parent and the partitions are locked against writers
// first, so no row slips in between the spans recorded and the triggers
// that record the next ones; readers are held up only by the constraints
// dropped at the end, until the commit. Stored readings of two network
// operators, which a table of IntegrityWrite can hold from other clients,
// refuse the upgrade and change nothing. The per-row CHECKs of the ids
// stay: they were checked on every stored row and cost only time.
func (h *Tier) upgradeToStatement(ctx context.Context, tx pgx.Tx, t *series.Table, have definition) error {
	if err := h.refuseTaken(ctx, tx, "ensure", t, series.IntegrityStatement, layoutRows); err != nil {
		return err
	}
	parent := h.ident(t.Name)
	if _, err := tx.Exec(ctx, `LOCK TABLE `+parent+` IN SHARE ROW EXCLUSIVE MODE`); err != nil {
		return err
	}
	parts, err := h.partitions(ctx, tx, t)
	if err != nil {
		return err
	}
	// The triggers lock each partition against its writers too; dropping
	// a constraint locks it against readers, so that comes last, after
	// the spans are recorded, and lasts only until the commit.
	stmts := append(layoutRows.statementDDL(h, t), h.triggerDDL(t, parent, t.Name)...)
	var drops []string
	for _, p := range parts {
		if !p.Attached {
			continue // being archived; no writer reaches it
		}
		stmts = append(stmts, h.triggerDDL(t, h.ident(p.Name), p.Name)...)
		for _, c := range []string{p.Name + "_operator", p.Name + "_overlap"} {
			drops = append(drops, `ALTER TABLE `+h.ident(p.Name)+` DROP CONSTRAINT IF EXISTS `+quote(c))
		}
	}
	for _, s := range stmts {
		if _, err := tx.Exec(ctx, s); err != nil {
			return err
		}
	}
	if _, err := tx.Exec(ctx, h.backfillSQL(t)); err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "23P01" {
			return &series.Error{Kind: series.InvariantViolation, Op: "ensure", Table: t.Name,
				Err: fmt.Errorf("upgrade to integrity statement refused: stored readings come from two network operators (%s)", pgErr.Detail)}
		}
		return err
	}
	for _, s := range drops {
		if _, err := tx.Exec(ctx, s); err != nil {
			return err
		}
	}
	have.Integrity = series.IntegrityStatement.String()
	def, _ := json.Marshal(have)
	if _, err := tx.Exec(ctx, `UPDATE `+h.ident(metaTable)+` SET definition = $2 WHERE name = $1`, t.Name, def); err != nil {
		return err
	}
	h.log.Info("hot: table upgraded", "table", t.Name, "integrity", series.IntegrityStatement)
	return nil
}

// backfillSQL returns the statement that records the spans of t's stored
// rows in its ownership relation, grouped as the statement check groups
// new rows (checkFuncDDL): a span per group without a gap, a span per row
// of the others.
func (h *Tier) backfillSQL(t *series.Table) string {
	var key []string
	for _, c := range t.Identity() {
		key = append(key, quote(c.Name))
	}
	cols := func(p string) string {
		return strings.Join(append([]string{p + "malo_id", p + "obis_code"}, append(each(p, key), p+"version_scope", p+"version")...), ", ")
	}
	ids := ""
	if len(key) > 0 {
		ids = ", " + strings.Join(each("r.", key), ", ")
	}
	return `WITH g AS MATERIALIZED (
	SELECT ` + cols("") + `, ` + bucketExpr(t, `"from"`) + ` AS b, min("from") AS lo, max("to") AS hi, count(*) AS n
	FROM ` + h.ident(t.Name) + ` GROUP BY ` + cols("") + `, b)
INSERT INTO ` + h.ident(ownersName(t)) + ` (malo_id, obis_code` + strings.ReplaceAll(ids, "r.", "") + `, operator, span)
SELECT r.malo_id::int8, ` + obisKey("r.obis_code") + ids + `, split_part(r.version_scope, ':', 1), tstzrange(r.lo, r.hi)
FROM g r WHERE ` + wholeCond(t, "r.") + `
UNION
SELECT r.malo_id::int8, ` + obisKey("r.obis_code") + ids + `, split_part(r.version_scope, ':', 1), tstzrange(r."from", r."to")
FROM ` + h.ident(t.Name) + ` r JOIN g ON (` + cols("g.") + `, g.b) = (` + cols("r.") + `, ` + bucketExpr(t, `r."from"`) + `)
WHERE NOT (` + wholeCond(t, "g.") + `)`
}

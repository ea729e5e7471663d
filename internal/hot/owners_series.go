package hot

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/meterstore/meterstore/series"
)

// The ownership relation of the dictionary layouts.
//
// A series id stands for one series within one bucket, so the dictionary
// layouts (dictionary, lean, step) keep one row per series id in
// <table>_operators: the series' network operators, sorted, and for each
// the multirange of the spans its readings cover. The statement check
// merges the spans of the new rows into their series' row with one
// INSERT ... ON CONFLICT DO UPDATE and refuses the statement
// (exclusion_violation, as the GiST exclusion constraint it replaces
// did) when a merged row has two operators whose spans overlap. On one
// grid two spans overlap only if they share a reading, so this is exact.
//
// The primary key serializes the writers of a series where the exclusion
// constraint did: an insert or update of a series' row waits for any
// other transaction that has one in flight, and then merges into the row
// as that transaction committed it (READ COMMITTED) or fails with a
// serialization failure (REPEATABLE READ and above), so no two
// transactions both miss each other's spans. A btree probe and a heap
// update per series and statement take the place of a GiST insert per
// span, which cost about 18 µs.

// seriesOwnersDDL returns the CREATE TABLE of t's ownership relation in
// the dictionary layouts, under the name rel.
func seriesOwnersDDL(rel string) string {
	return `CREATE TABLE ` + rel + ` (series int4 PRIMARY KEY, operators text[] NOT NULL, spans tstzmultirange[] NOT NULL)`
}

// seriesOwnersSQL returns the statements of the dictionary layouts'
// check that record the spans of the new rows in owners and refuse a
// second operator: claims is a FROM item of the claimed spans, columns
// s (series id), op (operator) and r (tstzrange); v_bad is an int4
// variable of the check.
func seriesOwnersSQL(owners, constraint, claims string) string {
	return `
	WITH m AS (SELECT c.s, c.op, range_agg(c.r) AS mr FROM ` + claims + ` GROUP BY c.s, c.op),
	n AS (SELECT m.s, array_agg(m.op ORDER BY m.op) AS ops, array_agg(m.mr ORDER BY m.op) AS mrs FROM m
		WHERE NOT EXISTS (SELECT 1 FROM ` + owners + ` o WHERE o.series = m.s AND o.spans[array_position(o.operators, m.op)] @> m.mr)
		GROUP BY m.s),
	up AS (INSERT INTO ` + owners + ` AS o (series, operators, spans) SELECT n.s, n.ops, n.mrs FROM n ORDER BY n.s
		ON CONFLICT (series) DO UPDATE SET (operators, spans) = (
			SELECT array_agg(y.op ORDER BY y.op), array_agg(y.m ORDER BY y.op)
			FROM (SELECT x.op, range_agg(z.r) AS m FROM unnest(o.operators || excluded.operators, o.spans || excluded.spans) AS x(op, mr),
				unnest(x.mr) AS z(r) GROUP BY x.op) y)
		RETURNING o.series, o.spans)
	SELECT up.series INTO v_bad FROM up
	WHERE cardinality(up.spans) > 1 AND EXISTS (SELECT 1 FROM unnest(up.spans) WITH ORDINALITY a(m, i), unnest(up.spans) WITH ORDINALITY b(m, j)
		WHERE a.i < b.j AND a.m && b.m)
	LIMIT 1;
	IF FOUND THEN
		RAISE EXCEPTION 'conflicting key value violates exclusion constraint "%"', '` + constraint + `'
			USING ERRCODE = 'exclusion_violation', CONSTRAINT = '` + constraint + `', TABLE = TG_TABLE_NAME, SCHEMA = TG_TABLE_SCHEMA,
			DETAIL = format('Series %s would have readings of two network operators.', v_bad);
	END IF;`
}

// upgradeSeriesOwners gives t's ownership relation, in tx, the shape of
// seriesOwnersDDL if it still has the one of a version before it (a row
// per operator and span under a GiST exclusion constraint), merging the
// spans of each series into its row. The caller replaces the check
// function that writes the relation in the same transaction.
func (h *Tier) upgradeSeriesOwners(ctx context.Context, tx pgx.Tx, t *series.Table) error {
	owners := h.ident(ownersName(t))
	if old, err := h.ownersBySpan(ctx, tx, t); err != nil || !old {
		return err
	}
	prev := ownersName(t) + "_upgrading"
	for _, s := range []string{
		`ALTER TABLE ` + owners + ` RENAME TO ` + quote(prev),
		seriesOwnersDDL(owners),
		`COMMENT ON TABLE ` + owners + ` IS ` + ownersComment(t),
		`INSERT INTO ` + owners + ` (series, operators, spans)
		SELECT series, array_agg(operator ORDER BY operator), array_agg(m ORDER BY operator)
		FROM (SELECT series, operator, range_agg(span) AS m FROM ` + h.ident(prev) + ` GROUP BY series, operator) x
		GROUP BY series ORDER BY series`,
		`DROP TABLE ` + h.ident(prev),
	} {
		if _, err := tx.Exec(ctx, s); err != nil {
			return fmt.Errorf("upgrade the ownership relation of %s: %w", t.Name, err)
		}
	}
	h.log.Info("hot: ownership relation keyed by series", "table", t.Name)
	return nil
}

// ownersComment returns the comment of t's ownership relation, as an SQL
// literal.
func ownersComment(t *series.Table) string {
	return `'MeterStore: the network operator of each span of readings of ` + t.Name + `, one per reading'`
}

// ownersBySpan reports whether t's ownership relation has a row per
// operator and span (the rows layout's, and the dictionary layouts'
// before seriesOwnersDDL), not one per series.
func (h *Tier) ownersBySpan(ctx context.Context, q querier, t *series.Table) (bool, error) {
	var span bool
	err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass($1) AND attname = 'span' AND NOT attisdropped)`,
		h.ident(ownersName(t))).Scan(&span)
	return span, err
}

package hot

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/meterstore/meterstore/series"
)

// TestAttributionCheck: in either layout the table's CHECK holds a plain
// client to series.CheckAttribution's rule for source_ref, as the store's
// writes are held: at most series.MaxAttributionLen bytes, no control
// character; an ordinary text column keeps taking them.
func TestAttributionCheck(t *testing.T) {
	ctx := t.Context()
	h, pool := newTier(t, Options{})
	for _, integrity := range []series.Integrity{series.IntegrityExclusion, series.IntegrityStatement} {
		t.Run(integrity.String(), func(t *testing.T) {
			tab := lastgang("power_" + integrity.String())
			tab.Integrity = integrity
			tab.Columns = append(series.ProvenanceColumns(), series.Column{Name: "note"})
			declare(t, h, tab)
			table := h.Schema() + "." + tab.Name
			slot := 0
			insert := func(col, v string) error {
				slot++
				r := qhRow(malo(1), "kWh", day.Add(time.Duration(slot)*15*time.Minute), 1, "9900000000003:2026-03", "1.5")
				return insertWith(ctx, pool, table, r, col, v)
			}
			for _, v := range []string{strings.Repeat("x", series.MaxAttributionLen), "Lieferung März.csv", "IC7:M2"} {
				if err := insert(series.ColumnSourceRef, v); err != nil {
					t.Errorf("source_ref %.20q: %v", v, err)
				}
			}
			if err := insert("note", "two\nlines"); err != nil {
				t.Errorf("a line break in an ordinary text column: %v", err)
			}
			for _, v := range []string{strings.Repeat("x", series.MaxAttributionLen+1), "a\tb", "esc\x1b[31m", "c1\u009b", ""} {
				err := insert(series.ColumnSourceRef, v)
				var pgErr *pgconn.PgError
				if !errors.As(err, &pgErr) || pgErr.Code != "23514" || pgErr.ConstraintName != "source_ref_check" {
					t.Errorf("source_ref %.20q: %v, want a violation of source_ref_check", v, err)
				}
			}
		})
	}
}

// insertWith inserts r with the value v in the extra column col, as a
// plain client would.
func insertWith(ctx context.Context, q execQuerier, table string, r plainRow, col, v string) error {
	dict, err := isDictionary(ctx, q, table)
	if err != nil {
		return err
	}
	if !dict {
		_, err := q.Exec(ctx, `INSERT INTO `+table+` (malo_id, obis_code, sparte, "from", "to", value, unit, quality, resolution, version, version_scope, balancing_day, `+quote(col)+`)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
			r.malo, r.obis, r.sparte, r.from, r.to, r.value, r.unit, r.quality, r.resolution, r.version, r.scope, r.day, v)
		return err
	}
	if err := plainDict(ctx, q, table, r); err != nil {
		return err
	}
	bucket := r.from.UTC().Truncate(24 * time.Hour)
	if lean, err := isLean(ctx, q, table); err != nil {
		return err
	} else if lean {
		startCol, start, err := leanStart(ctx, q, table, r.from)
		if err != nil {
			return err
		}
		_, err = q.Exec(ctx, `INSERT INTO `+table+` (series, attr, `+quote(startCol)+`, version, value, `+quote(col)+`)
SELECT s.id, a.id, $11, ($12::numeric - 9223372036854775808)::int8, $13, $14
FROM `+table+`_series s, `+leanAttr(table, 4)+`
WHERE s.bucket = $1 AND s.malo_id = $2 AND s.obis_code = $3`,
			bucket, r.malo, r.obis, r.melo, r.sparte, r.unit, leanResolution(r), r.scope, r.quality, r.day, start, r.version, r.value, v)
		return err
	}
	_, err = q.Exec(ctx, `INSERT INTO `+table+` (series, attr, "from", "to", value, quality, version, balancing_day, `+quote(col)+`)
SELECT s.id, a.id, $7, $8, $9, $10, $11, $12, $14
FROM `+table+`_series s, `+table+`_attrs a
WHERE s.bucket = $1 AND s.malo_id = $2 AND s.obis_code = $3
AND a.bucket = $1 AND a.melo_id IS NOT DISTINCT FROM $4 AND a.sparte = $5 AND a.unit = $6 AND a.resolution = 'PT15M' AND a.version_scope = $13 AND a.subject_id IS NULL`,
		bucket, r.malo, r.obis, r.melo, r.sparte, r.unit, r.from, r.to, r.value, r.quality, r.version, r.day, r.scope, v)
	return err
}

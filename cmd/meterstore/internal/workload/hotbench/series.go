package hotbench

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// SeriesSQL returns the statement with which PostgreSQL alone answers one
// series' resolved readings of a range, every column of readings, from
// the hot table named table in schema: the baseline of a typed read. Its
// parameters are the market location, the OBIS code, from and to. The
// statement follows the table's layout: the dictionary layout's series
// and attribute tables where they exist, the plain table otherwise.
func SeriesSQL(ctx context.Context, pool *pgxpool.Pool, schema, table string) (string, error) {
	var dict bool
	if err := pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, pgx.Identifier{schema, table + "_series"}.Sanitize()).Scan(&dict); err != nil {
		return "", fmt.Errorf("hotbench: the layout of %s.%s: %w", schema, table, err)
	}
	var lean bool
	if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass($1) AND attname = 'quality' AND NOT attisdropped)`,
		pgx.Identifier{schema, table + "_attrs"}.Sanitize()).Scan(&lean); err != nil {
		return "", fmt.Errorf("hotbench: the layout of %s.%s: %w", schema, table, err)
	}
	var step bool
	if err := pool.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass($1) AND attname = 'step' AND NOT attisdropped)`,
		pgx.Identifier{schema, table}.Sanitize()).Scan(&step); err != nil {
		return "", fmt.Errorf("hotbench: the layout of %s.%s: %w", schema, table, err)
	}
	if step {
		// The step layout is the lean one with from stored as the
		// fixtures' quarter hours since 1970: the range is one on steps,
		// which the primary key orders.
		return fmt.Sprintf(`SELECT DISTINCT ON (r.step) s.malo_id, a.melo_id, s.obis_code, a.sparte,
	timestamptz '1970-01-01 00:00:00+00' + r.step * interval '15 minutes' AS "from", timestamptz '1970-01-01 00:00:00+00' + (r.step + 1) * interval '15 minutes' AS "to",
	r.value, a.unit, a.quality, a.resolution, r.version::numeric + 9223372036854775808 AS version, a.version_scope, a.recorded_at, a.balancing_day, a.subject_id
FROM %[1]s r JOIN %[2]s s ON s.id = r.series JOIN %[3]s a ON a.id = r.attr
WHERE s.malo_id = $1 AND s.obis_code = $2 AND r.step >= ceil(extract(epoch FROM $3::timestamptz) / 900)::int8
	AND r.step < ceil(extract(epoch FROM $4::timestamptz) / 900)::int8 ORDER BY r.step, r.version DESC`,
			pgx.Identifier{schema, table}.Sanitize(), pgx.Identifier{schema, table + "_series"}.Sanitize(), pgx.Identifier{schema, table + "_attrs"}.Sanitize()), nil
	}
	if lean {
		// The lean layout derives to from the resolution (the fixtures'
		// quarter hours) and stores version less 2⁶³; quality,
		// recorded_at and the balancing day are the attrs'.
		return fmt.Sprintf(`SELECT DISTINCT ON (r."from") s.malo_id, a.melo_id, s.obis_code, a.sparte, r."from", r."from" + interval '15 minutes' AS "to", r.value, a.unit, a.quality,
	a.resolution, r.version::numeric + 9223372036854775808 AS version, a.version_scope, a.recorded_at, a.balancing_day, a.subject_id
FROM %[1]s r JOIN %[2]s s ON s.id = r.series JOIN %[3]s a ON a.id = r.attr
WHERE s.malo_id = $1 AND s.obis_code = $2 AND r."from" >= $3 AND r."from" < $4 ORDER BY r."from", r.version DESC`,
			pgx.Identifier{schema, table}.Sanitize(), pgx.Identifier{schema, table + "_series"}.Sanitize(), pgx.Identifier{schema, table + "_attrs"}.Sanitize()), nil
	}
	if dict {
		return fmt.Sprintf(`SELECT DISTINCT ON (r."from") s.malo_id, a.melo_id, s.obis_code, a.sparte, r."from", r."to", r.value, a.unit, r.quality,
	a.resolution, r.version, a.version_scope, r.recorded_at, r.balancing_day, a.subject_id
FROM %[1]s r JOIN %[2]s s ON s.id = r.series JOIN %[3]s a ON a.id = r.attr
WHERE s.malo_id = $1 AND s.obis_code = $2 AND r."from" >= $3 AND r."from" < $4 ORDER BY r."from", r.version DESC`,
			pgx.Identifier{schema, table}.Sanitize(), pgx.Identifier{schema, table + "_series"}.Sanitize(), pgx.Identifier{schema, table + "_attrs"}.Sanitize()), nil
	}
	return fmt.Sprintf(`SELECT DISTINCT ON ("from") malo_id, melo_id, obis_code, sparte, "from", "to", value, unit, quality,
	resolution, version, version_scope, recorded_at, balancing_day, subject_id
FROM %s WHERE malo_id = $1 AND obis_code = $2 AND "from" >= $3 AND "from" < $4 ORDER BY "from", version DESC`, pgx.Identifier{schema, table}.Sanitize()), nil
}

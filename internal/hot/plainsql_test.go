package hot

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// execQuerier is what a pool, a connection and a transaction share.
type execQuerier interface {
	Exec(context.Context, string, ...any) (pgconn.CommandTag, error)
	QueryRow(context.Context, string, ...any) pgx.Row
}

// plainRow is a reading in its natural columns, as a plain client writes
// it; a nil melo_id is NULL.
type plainRow struct {
	malo, obis, sparte string
	melo               *string
	from, to           time.Time
	value              any
	unit, quality      string
	resolution         string
	version            any
	scope              string
	day                string
}

// qhRow returns the plain row of a quarter hour of the tests' day.
func qhRow(malo, unit string, from time.Time, version any, scope string, value any) plainRow {
	return plainRow{malo: malo, obis: "1-1:1.29.0", sparte: "STROM", from: from, to: from.Add(15 * time.Minute), value: value,
		unit: unit, quality: "220", resolution: "PT15M", version: version, scope: scope, day: "2026-03-02"}
}

// isDictionary reports whether table (schema-qualified, unquoted) is in
// the dictionary layout: whether its series dictionary exists.
func isDictionary(ctx context.Context, q execQuerier, table string) (bool, error) {
	var ok bool
	err := q.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, table+"_series").Scan(&ok)
	return ok, err
}

// isLean reports whether table (schema-qualified, unquoted) is in the
// lean layout: whether its attrs dictionary has the quality.
func isLean(ctx context.Context, q execQuerier, table string) (bool, error) {
	var ok bool
	err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass($1) AND attname = 'quality' AND NOT attisdropped)`,
		table+"_attrs").Scan(&ok)
	return ok, err
}

// errOffGrid is leanStart's error for a start the step layout cannot
// store: every int4 stands for a start on the grid.
var errOffGrid = errors.New("off the grid: the step layout has no such start")

// leanStart returns the column and value a plain client writes as the
// start of r into table (schema-qualified, unquoted) in the lean layouts:
// in the step layout the number of quarter hours since 1970, which only a
// start on the grid has.
func leanStart(ctx context.Context, q execQuerier, table string, from time.Time) (string, any, error) {
	var step bool
	err := q.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM pg_attribute WHERE attrelid = to_regclass($1) AND attname = 'step' AND NOT attisdropped)`,
		table).Scan(&step)
	switch {
	case err != nil:
		return "", nil, err
	case !step:
		return "from", from, nil
	case from.Unix()%900 != 0:
		return "", nil, fmt.Errorf("%v: %w", from, errOffGrid)
	}
	return "step", int32(from.Unix() / 900), nil
}

// leanResolution returns the resolution a plain client states in the lean
// layout's attrs for r, which has no to: r's own, unless its interval
// lasts another time than a quarter hour.
func leanResolution(r plainRow) string {
	if d := r.to.Sub(r.from); d != 15*time.Minute {
		return "PT" + strconv.Itoa(int(d.Minutes())) + "M"
	}
	return r.resolution
}

// leanAttr returns, as a, the newest attrs row of table whose key is $1
// (bucket) and from $n on melo_id, sparte, unit, resolution, version
// scope, quality and balancing day.
func leanAttr(table string, n int) string {
	p := func(i int) string { return "$" + strconv.Itoa(n+i) }
	return `(SELECT * FROM ` + table + `_attrs WHERE bucket = $1 AND melo_id IS NOT DISTINCT FROM ` + p(0) + ` AND sparte = ` + p(1) + ` AND unit = ` + p(2) +
		` AND resolution = ` + p(3) + ` AND version_scope = ` + p(4) + ` AND subject_id IS NULL AND quality = ` + p(5) + ` AND balancing_day = ` + p(6) +
		` ORDER BY recorded_at DESC LIMIT 1) a`
}

// leanVersion returns version as the lean layout stores it, less 2⁶³.
func leanVersion(version any) (int64, error) {
	v, err := strconv.ParseUint(fmt.Sprint(version), 10, 64)
	return int64(v ^ 1<<63), err
}

// plainInsert inserts r into rel, table (schema-qualified, unquoted) or one
// of its partitions, with plain SQL as psql would: in the rows layout one
// INSERT of the natural columns; in the dictionary layout the dictionary
// rows first (ON CONFLICT DO NOTHING), then the reading with their ids.
// The bucket is the UTC day of from (daily partitions).
func plainInsert(ctx context.Context, q execQuerier, table, rel string, r plainRow) error {
	dict, err := isDictionary(ctx, q, table)
	if err != nil {
		return err
	}
	if !dict {
		_, err := q.Exec(ctx, `INSERT INTO `+rel+` (malo_id, melo_id, obis_code, sparte, "from", "to", value, unit, quality, resolution, version, version_scope, balancing_day)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)`,
			r.malo, r.melo, r.obis, r.sparte, r.from, r.to, r.value, r.unit, r.quality, r.resolution, r.version, r.scope, r.day)
		return err
	}
	if err := plainDict(ctx, q, table, r); err != nil {
		return err
	}
	bucket := r.from.UTC().Truncate(24 * time.Hour)
	if lean, err := isLean(ctx, q, table); err != nil {
		return err
	} else if lean {
		col, start, err := leanStart(ctx, q, table, r.from)
		if err != nil {
			return err
		}
		_, err = q.Exec(ctx, `INSERT INTO `+rel+` (series, attr, `+quote(col)+`, version, value)
SELECT s.id, a.id, $11, ($12::numeric - 9223372036854775808)::int8, $13
FROM `+table+`_series s, `+leanAttr(table, 4)+`
WHERE s.bucket = $1 AND s.malo_id = $2 AND s.obis_code = $3`,
			bucket, r.malo, r.obis, r.melo, r.sparte, r.unit, leanResolution(r), r.scope, r.quality, r.day, start, r.version, r.value)
		return err
	}
	_, err = q.Exec(ctx, `INSERT INTO `+rel+` (series, attr, "from", "to", value, quality, version, balancing_day)
SELECT s.id, a.id, $7, $8, $9, $10, $11, $12
FROM `+table+`_series s, `+table+`_attrs a
WHERE s.bucket = $1 AND s.malo_id = $2 AND s.obis_code = $3
AND a.bucket = $1 AND a.melo_id IS NOT DISTINCT FROM $4 AND a.sparte = $5 AND a.unit = $6 AND a.resolution = 'PT15M' AND a.version_scope = $13 AND a.subject_id IS NULL`,
		bucket, r.malo, r.obis, r.melo, r.sparte, r.unit, r.from, r.to, r.value, r.quality, r.version, r.day, r.scope)
	return err
}

// plainDict inserts the dictionary rows of r into those of table unless
// they exist.
func plainDict(ctx context.Context, q execQuerier, table string, r plainRow) error {
	bucket := r.from.UTC().Truncate(24 * time.Hour)
	if _, err := q.Exec(ctx, `INSERT INTO `+table+`_series (bucket, malo_id, obis_code) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
		bucket, r.malo, r.obis); err != nil {
		return err
	}
	if lean, err := isLean(ctx, q, table); err != nil {
		return err
	} else if lean {
		_, err := q.Exec(ctx, `INSERT INTO `+table+`_attrs (bucket, melo_id, sparte, unit, resolution, version_scope, quality, balancing_day) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING`,
			bucket, r.melo, r.sparte, r.unit, leanResolution(r), r.scope, r.quality, r.day)
		return err
	}
	_, err := q.Exec(ctx, `INSERT INTO `+table+`_attrs (bucket, melo_id, sparte, unit, resolution, version_scope) VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`,
		bucket, r.melo, r.sparte, r.unit, r.resolution, r.scope)
	return err
}

// plainCopy copies rows of one market location and OBIS code into rel,
// table or one of its partitions, with one COPY, as a plain client would:
// in the dictionary layout after inserting the dictionary rows and reading
// their ids.
func plainCopy(ctx context.Context, conn *pgx.Conn, table, rel string, rows []plainRow) error {
	dict, err := isDictionary(ctx, conn, table)
	if err != nil {
		return err
	}
	ident := pgx.Identifier(strings.Split(rel, "."))
	var data [][]any
	if !dict {
		for _, r := range rows {
			data = append(data, []any{r.malo, r.obis, r.sparte, r.from, r.to, r.value, r.unit, r.quality, r.resolution, r.version, r.scope, r.day})
		}
		_, err = conn.CopyFrom(ctx, ident, []string{"malo_id", "obis_code", "sparte", "from", "to", "value", "unit", "quality", "resolution", "version", "version_scope", "balancing_day"},
			pgx.CopyFromRows(data))
		return err
	}
	lean, err := isLean(ctx, conn, table)
	if err != nil {
		return err
	}
	startCol := "from"
	for _, r := range rows {
		bucket := r.from.UTC().Truncate(24 * time.Hour)
		var sid, aid int32
		if _, err := conn.Exec(ctx, `INSERT INTO `+table+`_series (bucket, malo_id, obis_code) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING`,
			bucket, r.malo, r.obis); err != nil {
			return err
		}
		if err := conn.QueryRow(ctx, `SELECT id FROM `+table+`_series WHERE bucket = $1 AND malo_id = $2 AND obis_code = $3`, bucket, r.malo, r.obis).Scan(&sid); err != nil {
			return err
		}
		if lean {
			if err := plainDict(ctx, conn, table, r); err != nil {
				return err
			}
			if err := conn.QueryRow(ctx, `SELECT a.id FROM `+leanAttr(table, 2), bucket, r.melo, r.sparte, r.unit, leanResolution(r), r.scope, r.quality, r.day).Scan(&aid); err != nil {
				return err
			}
			v, err := leanVersion(r.version)
			if err != nil {
				return err
			}
			col, start, err := leanStart(ctx, conn, table, r.from)
			if err != nil {
				return err
			}
			startCol = col
			data = append(data, []any{sid, aid, start, v, r.value})
			continue
		}
		if _, err := conn.Exec(ctx, `INSERT INTO `+table+`_attrs (bucket, sparte, unit, resolution, version_scope) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING`,
			bucket, r.sparte, r.unit, r.resolution, r.scope); err != nil {
			return err
		}
		if err := conn.QueryRow(ctx, `SELECT id FROM `+table+`_attrs WHERE bucket = $1 AND sparte = $2 AND unit = $3 AND resolution = $4 AND version_scope = $5
AND melo_id IS NULL AND subject_id IS NULL`, bucket, r.sparte, r.unit, r.resolution, r.scope).Scan(&aid); err != nil {
			return err
		}
		data = append(data, []any{sid, aid, r.from, r.to, r.value, r.quality, r.version, r.day})
	}
	cols := []string{"series", "attr", "from", "to", "value", "quality", "version", "balancing_day"}
	if lean {
		cols = []string{"series", "attr", startCol, "version", "value"}
	}
	_, err = conn.CopyFrom(ctx, ident, cols, pgx.CopyFromRows(data))
	return err
}

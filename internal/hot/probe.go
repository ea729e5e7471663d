package hot

import (
	"context"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// versionBias maps numeric(20,0) versions onto int8 and back: the server
// subtracts it, the client adds it by flipping the top bit.
const versionBias = "9223372036854775808"

func unbias(v int64) uint64 { return uint64(v) ^ 1<<63 }

// stored is a stored row found by a probe, next to the staged row it
// concerns.
type stored struct {
	row          int32
	from, to     time.Time
	version      uint64
	versionScope string
	value        int64
	unit         string
	quality      string
	resolution   string
	sparte       string
	melo         string
	subject      string
	extra        []*string // attribute columns, in declaration order
}

// probeSQL returns the statement that finds, for each staged row to be
// checked, the stored rows it could conflict with: rows of its merge key
// (any version), rows of its series and version starting inside its
// interval, and rows of its series and version starting at one of its
// ancestors and reaching into it. $1 selects all staged rows instead of
// those marked probe. In the dictionary layout a stored row is of the
// staged row's series if it has its series id: the dictionary's key
// starts with the bucket, so it is no index for the natural columns.
func (h *Tier) probeSQL(t *series.Table, l layout) string {
	on := l.seriesOn(t, "p", "s")
	cols := []string{`s.row_no`, `p."from"`, `(p.version - ` + versionBias + `)::int8`, `p.version_scope`,
		`(p.value * 1000000)::int8`, `p.unit`, `p.quality`, `p.sparte`, `coalesce(p.melo_id, '')`, `coalesce(p.subject_id, '')`}
	if t.TimeModel == series.Interval {
		cols = append(cols, `p."to"`, `p.resolution`)
	}
	for _, c := range t.Columns {
		if !c.Identity {
			cols = append(cols, `p.`+quote(c.Name)+`::text`)
		}
	}
	sel := `SELECT ` + strings.Join(cols, ", ") + ` FROM ` + stageName(t, l) + ` s `
	parent := l.natural(h, t, h.ident(t.Name))
	if t.TimeModel == series.Point {
		return sel + `JOIN ` + parent + ` p ON ` + on + ` AND p."from" = s."from" WHERE ($1 OR s.probe)`
	}
	inside := parent
	if l.columnExpr(t, "from") != "" {
		// The layout derives from, which no index orders: the staged
		// interval bounds the stored start instead, for the primary key.
		col := `q.` + l.fromColumn()
		inside = `LATERAL ` + l.natural(h, t, `(SELECT * FROM `+h.ident(t.Name)+` q WHERE `+col+` >= `+l.fromExpr(t, `s."from"`)+
			` AND `+col+` < `+l.fromExpr(t, `s."to"`)+`)`)
	}
	q := sel + `JOIN ` + inside + ` p ON ` + on + ` AND p."from" >= s."from" AND p."from" < s."to"
WHERE ($1 OR s.probe) AND (p."from" = s."from" OR p.version = s.version)`
	if len(t.AcceptedResolutions()) == 1 {
		// Intervals on one grid are nested only if equal.
		return q
	}
	return q + `
UNION ALL
` + sel + `CROSS JOIN LATERAL unnest(s.anc) AS a(start)
JOIN ` + parent + ` p ON ` + on + ` AND p."from" = a.start AND p.version = s.version AND p."to" > s."from"
WHERE ($1 OR s.probe)`
}

// probe checks staged rows against the stored ones. Rows stored
// identically become Present and leave the staging table; any conflict
// fails the batch.
func (h *Tier) probe(ctx context.Context, tx pgx.Tx, t *series.Table, l layout, b *batch, all bool) error {
	byRow := make(map[int32]*staged, len(b.rows))
	for i := range b.rows {
		byRow[b.rows[i].row] = &b.rows[i]
	}
	rows, err := tx.Query(ctx, h.probeSQL(t, l), all)
	if err != nil {
		return err
	}
	var bad series.Problems
	var present []int32
	nattr := len(t.Columns) - len(t.Identity())
	for rows.Next() {
		var p stored
		var version int64
		dst := []any{&p.row, &p.from, &version, &p.versionScope, &p.value, &p.unit, &p.quality, &p.sparte, &p.melo, &p.subject}
		if t.TimeModel == series.Interval {
			dst = append(dst, &p.to, &p.resolution)
		}
		p.extra = make([]*string, nattr)
		for i := range p.extra {
			dst = append(dst, &p.extra[i])
		}
		if err := rows.Scan(dst...); err != nil {
			rows.Close()
			return err
		}
		p.version = unbias(version)
		s := byRow[p.row]
		if s == nil || b.status[s.row] == series.Present {
			continue
		}
		switch sameFrom := p.from.Equal(s.from); {
		case sameFrom && p.version == uint64(s.version):
			have := p.reading(t)
			if diff, was, is := t.Restated(&have, s.src); diff != "" {
				bad.Add(int(s.row), "restates version %d: %s %s, stored %s", p.version, diff, is, was)
			} else {
				b.status[s.row] = series.Present
				present = append(present, s.row)
			}
		case sameFrom:
			if op, have := s.src.NetworkOperator(), operatorOf(p.versionScope); op != have {
				bad.Add(int(s.row), "network operator %s, but version %d of the reading is stored from %s", op, p.version, have)
			}
		default:
			bad.Add(int(s.row), "overlaps the stored %s interval from %s within version %d",
				p.resolution, p.from.Format(time.RFC3339), p.version)
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if err := bad.Err(series.IntegrityViolation, "write", t.Name); err != nil {
		return err
	}
	if len(present) > 0 {
		_, err := tx.Exec(ctx, `DELETE FROM `+stageName(t, l)+` WHERE row_no = ANY($1)`, present)
		return err
	}
	return nil
}

func operatorOf(scope string) string {
	op, _, _ := strings.Cut(scope, ":")
	return op
}

// reading returns the stored row as the Reading it states, for the one
// comparison of restated values (series.Table.Restated).
func (p *stored) reading(t *series.Table) series.Reading {
	r := series.Reading{
		From: p.from, To: p.to, Value: series.Decimal(p.value), Version: p.version,
		VersionScope: p.versionScope, MeLo: p.melo, Subject: p.subject,
	}
	// The columns' CHECK constraints admit only canonical codes, so a
	// code that does not parse is left zero and shows as a difference.
	r.Unit, _ = metering.ParseUnit(p.unit)
	r.Quality, _ = metering.ParseQuality(p.quality)
	r.Commodity, _ = metering.ParseCommodity(p.sparte)
	if p.resolution != "" {
		r.Resolution, _ = metering.ParseResolution(p.resolution)
	}
	i := 0
	for _, c := range t.Columns {
		if c.Identity {
			continue
		}
		if v := p.extra[i]; v != nil {
			if r.Extra == nil {
				r.Extra = make(map[string]string)
			}
			r.Extra[c.Name] = *v
		}
		i++
	}
	return r
}

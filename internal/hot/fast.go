package hot

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/meterstore/meterstore/series"
)

// The fast path.
//
// Most batches are new readings and corrections under new versions: no row
// of them is stored yet, and none conflicts with a stored one. Such a batch
// needs no staging table and no INSERT ... SELECT: Write copies it straight
// into the parent, under a savepoint, and the primary key, the exclusion
// constraints and the CHECKs judge it as they would the INSERT. Only when
// they refuse it (a unique, exclusion or check violation) does Write roll
// back to the savepoint and take the staged path, which tells an identical
// redelivery (Present) from a restatement (IntegrityViolation) and names the
// rows. Every row of a batch that goes through the fast path is Inserted:
// the primary key saw that none of them was stored.
//
// A table without exclusion constraints gets the one check they would have
// made, one network operator per reading, as a set-based statement after
// the copy, in the same transaction and under the same advisory locks the
// staged path's probe holds. It reads each run of consecutive intervals of
// a series as one index range rather than row by row; that is exact only
// where every stored interval of the range is the same reading as one of
// the run's rows, which is why the fast path of such tables is limited to
// a single resolution of fixed length (see fastPath).

// fastPath reports whether b may be copied straight into the parent of t,
// whose integrity is i.
func fastPath(t *series.Table, i series.Integrity, b *batch) bool {
	if i != series.IntegrityWrite {
		// The constraints, the statement check and the primary key see
		// every conflict but those across partitions, which the rows
		// marked probe must be checked for before the insert.
		return !b.anyProbe()
	}
	// Without constraints between rows the check after the copy stands
	// in for the probe. It is exact for intervals on one grid, which two
	// stored intervals of a series share only if they start together.
	return t.StatementCapable()
}

// fastRefusal reports whether err is the refusal of a constraint the
// staged path explains: a unique, exclusion or check violation, or a
// deadlock between two writers' exclusion checks (see concurrentRefusal).
func fastRefusal(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && pgErr.Code == "23514" || concurrentRefusal(err)
}

// concurrentRefusal reports whether err is a refusal that rows written
// concurrently can cause: a unique or exclusion violation, or a deadlock.
// Two writers that insert colliding rows into an exclusion constraint can
// each find the other's row and wait for it; PostgreSQL aborts one of
// them, and rolled back to its savepoint that one tries again, waits for
// the other to finish, and finds out what it collided with.
func concurrentRefusal(err error) bool {
	var pgErr *pgconn.PgError
	return errors.As(err, &pgErr) && (pgErr.Code == "23505" || pgErr.Code == "23P01" || pgErr.Code == "40P01")
}

// copyDirect copies b into t's parent under the savepoint hot_fast, which
// the caller has set. It returns true
// if every row went in and passed the checks, false, rolled back to the
// savepoint, if a constraint refused the copy, and an error otherwise,
// including an IntegrityViolation found after the copy. l is t's layout.
func (h *Tier) copyDirect(ctx context.Context, tx pgx.Tx, t *series.Table, i series.Integrity, l layout, b *batch) (bool, error) {
	var err error
	if binaryDirect(t, l) && !b.substitute {
		err = h.copyEncoded(ctx, tx, t, l, b)
	} else {
		src := newStageSource(t, l, b.rows)
		src.direct = true
		_, err = tx.CopyFrom(ctx, pgx.Identifier{h.schema, t.Name}, l.writeColumns(t, false), src)
	}
	if err != nil {
		if !fastRefusal(err) {
			return false, err
		}
		_, err := tx.Exec(ctx, `ROLLBACK TO SAVEPOINT hot_fast`)
		return false, err
	}
	if i == series.IntegrityWrite {
		if err := h.checkOperators(ctx, tx, t, b); err != nil {
			return false, err
		}
	}
	return true, nil
}

// A run is a stretch of b.rows of one series and one network operator
// whose intervals follow each other without a gap: every interval of the
// series that a stored row can start in [lo, hi) is one of its readings.
type run struct {
	first, n int // b.rows[first:first+n]
	lo, hi   time.Time
}

// runs splits the rows into runs, in batch order: a batch delivered meter
// by meter has a run per meter and day.
func runs(t *series.Table, rows []staged) []run {
	var out []run
	for i := range rows {
		s := &rows[i]
		if len(out) > 0 {
			r := &out[len(out)-1]
			p := &rows[r.first+r.n-1]
			if s.from.Equal(r.hi) && t.CompareSeries(p.src, s.src) == 0 && p.src.NetworkOperator() == s.src.NetworkOperator() {
				r.n++
				r.hi = s.to
				continue
			}
		}
		out = append(out, run{first: i, n: 1, lo: s.from, hi: s.to})
	}
	return out
}

// operatorSQL returns the statement that finds, for each run, the stored
// rows of its series starting within it that come from another network
// operator. The runs arrive as arrays: market location, OBIS code, start,
// end, operator, then one per identity column.
func (h *Tier) operatorSQL(t *series.Table) string {
	cols := []string{"malo_id", "obis_code", "lo", "hi", "op"}
	args := []string{"$1::text[]", "$2::text[]", "$3::timestamptz[]", "$4::timestamptz[]", "$5::text[]"}
	idCols, idArgs, on := identityRuns(t, 6, `p.malo_id = r.malo_id AND p.obis_code = r.obis_code AND p."from" >= r.lo AND p."from" < r.hi`)
	cols, args = append(cols, idCols...), append(args, idArgs...)
	return `SELECT r.i::int4, p."from", (p.version - ` + versionBias + `)::int8, p.version_scope
FROM unnest(` + strings.Join(args, ", ") + `) WITH ORDINALITY AS r(` + strings.Join(cols, ", ") + `, i)
JOIN ` + h.ident(t.Name) + ` p ON ` + on + `
WHERE split_part(p.version_scope, ':', 1) <> r.op`
}

// checkOperators fails the batch if a stored row gives one of its readings
// another network operator. It runs after the copy, under the advisory
// locks of every partition the batch writes, so it sees every row
// committed by a writer that could conflict with it, and every later such
// writer sees the batch.
func (h *Tier) checkOperators(ctx context.Context, tx pgx.Tx, t *series.Table, b *batch) error {
	rs := runs(t, b.rows)
	ident := t.Identity()
	malo := make([]string, len(rs))
	obis := make([]string, len(rs))
	lo := make([]time.Time, len(rs))
	hi := make([]time.Time, len(rs))
	op := make([]string, len(rs))
	extra := make([][]*string, len(ident))
	for j := range extra {
		extra[j] = make([]*string, len(rs))
	}
	for i, r := range rs {
		s := b.rows[r.first].src
		malo[i], obis[i], lo[i], hi[i], op[i] = s.MaLo, s.OBIS, r.lo, r.hi, s.NetworkOperator()
		for j, c := range ident {
			v := s.Extra[c.Name]
			extra[j][i] = &v
		}
	}
	args := []any{malo, obis, lo, hi, op}
	for _, e := range extra {
		args = append(args, e)
	}
	rows, err := tx.Query(ctx, h.operatorSQL(t), args...)
	if err != nil {
		return err
	}
	var bad series.Problems
	for rows.Next() {
		var i int32
		var from time.Time
		var version int64
		var scope string
		if err := rows.Scan(&i, &from, &version, &scope); err != nil {
			rows.Close()
			return err
		}
		// The grid makes from one of the run's; should it not be, the
		// run's first row stands for it rather than nothing.
		r := rs[i-1]
		s := &b.rows[r.first]
		for k := r.first; k < r.first+r.n; k++ {
			if b.rows[k].from.Equal(from) {
				s = &b.rows[k]
				break
			}
		}
		bad.Add(int(s.row), "network operator %s, but version %d of the reading is stored from %s",
			s.src.NetworkOperator(), unbias(version), operatorOf(scope))
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if err := bad.Err(series.IntegrityViolation, "write", t.Name); err != nil {
		return err
	}
	return nil
}

// identityRuns extends a join of runs r (unnested arrays) to stored rows p
// by t's identity columns: their run columns c0, c1, ..., the array
// parameters numbered from first, and on with one equality each.
func identityRuns(t *series.Table, first int, on string) (cols, args []string, _ string) {
	for i, c := range t.Identity() {
		name := "c" + strconv.Itoa(i)
		cols = append(cols, name)
		args = append(args, "$"+strconv.Itoa(first+i)+"::text[]")
		v := "r." + name
		if c.ColumnType() == series.BigInt {
			v += "::bigint"
		}
		on += ` AND p.` + quote(c.Name) + ` = ` + v
	}
	return cols, args, on
}

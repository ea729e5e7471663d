package hot

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/meterstore/meterstore/series"
)

// A dictionary names one of a table's dictionaries and its key columns.
// Keys travel as text arrays, cast to the columns' types in SQL, and come
// back in the same text (outputs), so Go matches them as strings.
type dictionary struct {
	name  string   // relation name
	cols  []string // key columns, unquoted
	types []string // their SQL types
	null  []bool   // whether NULL is a value of the key column
	// fixedCols are key columns whose values the server gives, fixedVals
	// (SQL expressions such as now()): not sent, and not returned.
	fixedCols, fixedVals []string
}

// unnest returns the FROM item of the key arrays $1...$n, one column k<i>
// per key column, with ordinality i.
func (d *dictionary) unnest() string {
	args := make([]string, len(d.cols))
	names := make([]string, len(d.cols))
	for i := range d.cols {
		args[i] = "$" + strconv.Itoa(i+1) + "::text[]"
		names[i] = "k" + strconv.Itoa(i)
	}
	return `unnest(` + strings.Join(args, ", ") + `) WITH ORDINALITY AS u(` + strings.Join(names, ", ") + `, i)`
}

// outputs returns the key columns of the dictionary row p in the text they
// are sent in.
func (d *dictionary) outputs(p string) string {
	out := make([]string, len(d.cols))
	for i, c := range d.cols {
		switch d.types[i] {
		case "timestamptz":
			out[i] = `to_char(` + p + quote(c) + ` AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS') || '+00'`
		case "date":
			out[i] = `to_char(` + p + quote(c) + `, 'YYYY-MM-DD')`
		default:
			out[i] = p + quote(c) + `::text`
		}
	}
	return strings.Join(out, ", ")
}

// matches returns the condition that dictionary row p has the key u.
func (d *dictionary) matches(p string) string {
	on := make([]string, len(d.cols))
	for i, c := range d.cols {
		op := " = "
		if d.null[i] {
			op = " IS NOT DISTINCT FROM "
		}
		on[i] = p + quote(c) + op + "u.k" + strconv.Itoa(i) + "::" + d.types[i]
	}
	for i, c := range d.fixedCols {
		on = append(on, p+quote(c)+" = "+d.fixedVals[i])
	}
	return strings.Join(on, " AND ")
}

// selectSQL returns the statement that finds the ids of the keys sent.
func (h *Tier) dictSelectSQL(d *dictionary) string {
	return `SELECT d.id, ` + d.outputs("d.") + ` FROM ` + d.unnest() + ` JOIN ` + h.ident(d.name) + ` d ON ` + d.matches("d.")
}

// insertSQL returns the statement that inserts the keys sent that its
// snapshot does not hold, in their order, and returns the ids of those it
// inserted: a key stored already spends no id, and one a concurrent
// writer inserted first is left out. Only a conflict on the key is
// passed over: an id still in use when the sequence comes round again
// must fail with a unique violation, which resolveIDs retries with the
// next id, not leave the key without one.
func (h *Tier) dictInsertSQL(d *dictionary) string {
	cols := make([]string, len(d.cols))
	vals := make([]string, len(d.cols))
	for i, c := range d.cols {
		cols[i] = quote(c)
		vals[i] = "u.k" + strconv.Itoa(i) + "::" + d.types[i]
	}
	for i, c := range d.fixedCols {
		cols, vals = append(cols, quote(c)), append(vals, d.fixedVals[i])
	}
	return `INSERT INTO ` + h.ident(d.name) + ` (` + strings.Join(cols, ", ") + `) SELECT ` + strings.Join(vals, ", ") +
		` FROM ` + d.unnest() + ` WHERE NOT EXISTS (SELECT FROM ` + h.ident(d.name) + ` d WHERE ` + d.matches("d.") + `)` +
		` ORDER BY u.i ON CONFLICT ON CONSTRAINT ` + quote(d.name+"_key") + ` DO NOTHING RETURNING id, ` + d.outputs("")
}

// keyString returns a key as one string: each part marked NULL or not,
// then its text, which holds no NUL.
func keyString(k []*string) string {
	var b strings.Builder
	for _, p := range k {
		if p == nil {
			b.WriteString("N\x00")
			continue
		}
		b.WriteString("V")
		b.WriteString(*p)
		b.WriteByte(0)
	}
	return b.String()
}

// A lookup is the keys of one dictionary a write needs ids for, and what
// ids found of them.
type lookup struct {
	d    *dictionary
	keys [][]*string
	strs []string       // keyString of each key
	at   map[string]int // index of each key by its keyString
	// out, found and inserted hold each key's id, whether it has one,
	// and whether this transaction inserted its row.
	out             []int32
	found, inserted []bool
}

func newLookup(d *dictionary, keys [][]*string) *lookup {
	l := &lookup{d: d, keys: keys, strs: make([]string, len(keys)), at: make(map[string]int, len(keys)),
		out: make([]int32, len(keys)), found: make([]bool, len(keys)), inserted: make([]bool, len(keys))}
	for i, k := range keys {
		l.strs[i] = keyString(k)
		l.at[l.strs[i]] = i
	}
	return l
}

// missing returns the keys without an id, in key order.
func (l *lookup) missing() []int {
	var m []int
	for i := range l.keys {
		if !l.found[i] {
			m = append(m, i)
		}
	}
	slices.SortFunc(m, func(a, b int) int { return strings.Compare(l.strs[a], l.strs[b]) })
	return m
}

// queue queues sql on the keys want and records the ids it returns,
// as inserted if ins.
func (l *lookup) queue(q *pgx.Batch, sql string, want []int, ins bool) {
	args := make([]any, len(l.d.cols))
	for c := range l.d.cols {
		col := make([]*string, len(want))
		for j, i := range want {
			col[j] = l.keys[i][c]
		}
		args[c] = col
	}
	q.Queue(sql, args...).Query(func(rows pgx.Rows) error {
		k := make([]*string, len(l.d.cols))
		dst := make([]any, 1+len(l.d.cols))
		var id int32
		dst[0] = &id
		for c := range k {
			dst[1+c] = &k[c]
		}
		for rows.Next() {
			if err := rows.Scan(dst...); err != nil {
				return err
			}
			i, ok := l.at[keyString(k)]
			if !ok {
				return fmt.Errorf("dictionary %s returned a key not asked for", l.d.name)
			}
			l.out[i], l.found[i], l.inserted[i] = id, true, ins
		}
		return rows.Err()
	})
}

// ids finds the id of every key of ls, inserting those the dictionaries
// lack, after the statements of pre, which go in the first round trip.
// The look-up and the insert of the keys it may not have found go in one
// round trip for all dictionaries: the insert, a statement after the
// look-up with a snapshot of its own, leaves out the keys its snapshot
// holds, which include every key the look-up found, so the keys it
// returns are this transaction's. Keys a concurrent writer inserted first
// are looked up again in a second round trip. Keys are inserted sorted,
// the dictionaries in the order of ls, so two writers wait for each
// other at their first common key rather than deadlock; ids are not spent
// on keys that exist.
func (h *Tier) ids(ctx context.Context, tx pgx.Tx, pre []string, ls ...*lookup) error {
	send := func(steps ...func(q *pgx.Batch, l *lookup)) error {
		var q pgx.Batch
		for _, s := range pre {
			q.Queue(s)
		}
		pre = nil
		for _, step := range steps {
			for _, l := range ls {
				step(&q, l)
			}
		}
		if q.Len() == 0 {
			return nil
		}
		return tx.SendBatch(ctx, &q).Close()
	}
	// Before the round trip no key is found: each is looked up and, in
	// key order, offered to the insert.
	all := func(l *lookup) []int {
		a := make([]int, len(l.keys))
		for i := range a {
			a[i] = i
		}
		return a
	}
	if err := send(func(q *pgx.Batch, l *lookup) { l.queue(q, h.dictSelectSQL(l.d), all(l), false) },
		func(q *pgx.Batch, l *lookup) { l.queue(q, h.dictInsertSQL(l.d), l.missing(), true) }); err != nil {
		return err
	}
	// Keys a concurrent writer inserted and committed meanwhile.
	if err := send(func(q *pgx.Batch, l *lookup) {
		if m := l.missing(); len(m) > 0 {
			l.queue(q, h.dictSelectSQL(l.d), m, false)
		}
	}); err != nil {
		return err
	}
	for _, l := range ls {
		if m := l.missing(); len(m) > 0 {
			return fmt.Errorf("dictionary %s: %d keys neither found nor inserted", l.d.name, len(m))
		}
	}
	return nil
}

// resolveIDs gives every row of b the ids of its series and attributes
// in t's dictionaries, those of the lean layout if lean, inserting the
// keys that are missing. A deadlock or
// a unique violation between concurrent inserts is retried from a
// savepoint, at most maxAttempts times, then reported Unavailable.
func (h *Tier) resolveIDs(ctx context.Context, tx pgx.Tx, t *series.Table, b *batch, lean bool) error {
	for attempt := 1; ; attempt++ {
		err := h.resolve(ctx, tx, t, b, lean)
		var pgErr *pgconn.PgError
		switch {
		case err == nil:
			return nil
		case !errors.As(err, &pgErr) || pgErr.Code != "40P01" && pgErr.Code != "23505":
			return err
		case attempt == maxAttempts:
			return &series.Error{Kind: series.Unavailable, Op: "write", Table: t.Name,
				Err: fmt.Errorf("dictionary keys refused %d times by keys written concurrently: %w", attempt, err)}
		}
		if _, err := tx.Exec(ctx, `ROLLBACK TO SAVEPOINT hot_dict`); err != nil {
			return err
		}
	}
}

// resolve collects b's distinct dictionary keys, finds or inserts them,
// and records the ids in b's rows.
// The savepoint is set in the look-up's first round trip.
func (h *Tier) resolve(ctx context.Context, tx pgx.Tx, t *series.Table, b *batch, lean bool) error {
	serDict, attrDict := dictionaries(t)
	if lean {
		attrDict = leanAttrs(t)
	}
	ident := t.Identity()
	type keyed struct {
		at   map[string]int
		keys [][]*string
	}
	ser := keyed{at: map[string]int{}}
	attrs := keyed{at: map[string]int{}}
	add := func(k *keyed, key []*string) int {
		s := keyString(key)
		if i, ok := k.at[s]; ok {
			return i
		}
		k.at[s] = len(k.keys)
		k.keys = append(k.keys, key)
		return len(k.keys) - 1
	}
	sIdx := make([]int, len(b.rows))
	aIdx := make([]int, len(b.rows))
	var bucket *string // rows come in runs of one bucket
	var start, end time.Time
	for i := range b.rows {
		s := &b.rows[i]
		if bucket == nil || s.from.Before(start) || !s.from.Before(end) {
			bt := bucketText(t, s.from)
			bucket, start = &bt, t.Width.Start(s.from)
			end = t.Width.Next(start)
		} else if p := &b.rows[i-1]; t.CompareSeries(p.src, s.src) == 0 && sameAttrs(p, s) && (!lean || p.quality == s.quality && p.day.Equal(s.day)) {
			// Rows come in runs of one series and delivery as well: the
			// keys of the row before are this row's.
			sIdx[i], aIdx[i] = sIdx[i-1], aIdx[i-1]
			continue
		}
		sk := make([]*string, 0, 3+len(ident))
		sk = append(sk, bucket, &s.src.MaLo, &s.src.OBIS)
		for _, c := range ident {
			v := s.src.Extra[c.Name]
			if c.ColumnType() == series.BigInt {
				if n, err := strconv.ParseInt(v, 10, 64); err == nil {
					v = strconv.FormatInt(n, 10) // as int8::text spells it
				}
			}
			sk = append(sk, &v)
		}
		sIdx[i] = add(&ser, sk)
		ak := []*string{bucket, &s.sparte, &s.unit, &s.resolution, &s.src.VersionScope, s.melo, s.subject}
		if lean {
			day := s.day.Format(time.DateOnly)
			ak = append(ak, &s.quality, &day)
		}
		aIdx[i] = add(&attrs, ak)
	}
	sl, al := newLookup(&serDict, ser.keys), newLookup(&attrDict, attrs.keys)
	if err := h.ids(ctx, tx, []string{`SAVEPOINT hot_dict`}, sl, al); err != nil {
		return err
	}
	for i := range b.rows {
		r := &b.rows[i]
		r.series, r.attr, r.newSeries = sl.out[sIdx[i]], al.out[aIdx[i]], sl.inserted[sIdx[i]]
	}
	return nil
}

// sameAttrs reports whether staged rows a and b have the same key in the
// attrs dictionary but the bucket.
func sameAttrs(a, b *staged) bool {
	return a.sparte == b.sparte && a.unit == b.unit && a.resolution == b.resolution &&
		a.src.VersionScope == b.src.VersionScope && a.src.MeLo == b.src.MeLo && a.src.Subject == b.src.Subject
}

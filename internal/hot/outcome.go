package hot

import (
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/meterstore/meterstore/series"
)

// Outcomes.
//
// A write reports per row whether it was new to its merge key (Inserted),
// displaced the versions stored before it (Superseded), or arrived after a
// higher version and does not win (Shadowed). The winner is the highest
// version whatever the order of arrival, so the outcome is decided by
// version against what was stored when the row went in. Two writers of one
// series must therefore not both decide against a state without the
// other's rows: Write takes an advisory lock per series before it looks,
// and holds it to commit, so concurrent writes of a series get the outcomes
// of some sequential order.
//
// A batch of few series locks each series exclusively, under a shared lock
// of its coarse bucket; one of many series locks its coarse buckets
// exclusively, so the locks a transaction takes stay bounded. Every
// writer takes the coarse locks before the fine ones, each in ascending
// order, so two writers never wait for each other in a cycle.

const (
	// coarseBuckets is the number of coarse series buckets of a table.
	coarseBuckets = 256
	// fineSeriesLimit is the most series a batch locks one by one.
	fineSeriesLimit = 64
)

// seriesHash returns the hash of the series of r: its merge key without
// from.
func seriesHash(t *series.Table, r *series.Reading) uint32 {
	f := fnv.New32a()
	f.Write([]byte(r.MaLo))
	f.Write([]byte{0})
	f.Write([]byte(r.OBIS))
	for _, c := range t.Identity() {
		f.Write([]byte{0})
		f.Write([]byte(r.Extra[c.Name]))
	}
	return f.Sum32()
}

// queueLockSeries queues in q the statements that take the advisory
// locks of the series of b's rows, held to the end of the transaction.
//
// A series whose dictionary row this transaction inserted (newSeries)
// needs no lock: until the transaction ends, every other writer of the
// series waits at the dictionary's key, and then finds the row this one
// committed, or inserts its own if this one rolled back, before it takes
// its locks and looks for other versions. A write of new series, the
// first delivery of a day, takes no series lock at all.
func (h *Tier) queueLockSeries(q *pgx.Batch, t *series.Table, b *batch) {
	fine := make([]int32, 0, len(b.rows))
	for i := range b.rows {
		// Rows come in runs of a series, hashed once; a run crossing
		// buckets may be new in one of them only.
		if b.rows[i].newSeries || i > 0 && !b.rows[i-1].newSeries && t.CompareSeries(b.rows[i-1].src, b.rows[i].src) == 0 {
			continue
		}
		fine = append(fine, int32(seriesHash(t, b.rows[i].src)))
	}
	slices.Sort(fine)
	fine = slices.Compact(fine)
	coarse := make([]int32, len(fine))
	for i, k := range fine {
		coarse[i] = int32(uint32(k) % coarseBuckets)
	}
	slices.Sort(coarse)
	coarse = slices.Compact(coarse)
	coarseKey, fineKey := h.lockKey(t.Name+"\x00series-bucket"), h.lockKey(t.Name+"\x00series")
	switch {
	case len(fine) == 0:
		return
	case len(fine) > fineSeriesLimit:
		q.Queue(`SELECT count(pg_advisory_xact_lock($1, k)) FROM unnest($2::int4[]) k`, coarseKey, coarse)
		return
	}
	q.Queue(`SELECT count(pg_advisory_xact_lock_shared($1, k)) FROM unnest($2::int4[]) k;`, coarseKey, coarse)
	q.Queue(`SELECT count(pg_advisory_xact_lock($1, k)) FROM unnest($2::int4[]) k`, fineKey, fine)
}

// A versionRun is a stretch of b.rows of one series and version whose
// starts ascend: the stored rows of other versions it needs to know of lie
// in one index range [lo, hi].
type versionRun struct {
	first, n int
	lo, hi   time.Time
}

func versionRuns(t *series.Table, l layout, rows []staged) []versionRun {
	var out []versionRun
	for i := range rows {
		s := &rows[i]
		if len(out) > 0 {
			r := &out[len(out)-1]
			p := &rows[r.first+r.n-1]
			if s.from.After(p.from) && s.version == p.version && l.sameSeries(p, s) &&
				t.CompareSeries(p.src, s.src) == 0 {
				r.n++
				r.hi = s.from
				continue
			}
		}
		out = append(out, versionRun{first: i, n: 1, lo: s.from, hi: s.from})
	}
	return out
}

// othersSQL returns the statement that finds, for each run, the stored rows
// of its series starting in it under another version. The runs arrive as
// arrays: start, end, version and what layout l sends of the series
// (runKey): the series id in the dictionary layout, else market
// location, OBIS code and one array per identity column.
func (h *Tier) othersSQL(t *series.Table, l layout) string {
	keyCols, keyArgs, on, scope := l.runKey(h, t)
	cols := append([]string{"lo", "hi", "v"}, keyCols...)
	args := append([]string{"$1::timestamptz[]", "$2::timestamptz[]", "$3::text[]"}, keyArgs...)
	from := `p.` + l.fromColumn()
	return `SELECT r.i::int4, ` + l.fromTime(t, from) + `, ` + l.storedVersion("p") + `, ` + scope + `
FROM unnest(` + strings.Join(args, ", ") + `) WITH ORDINALITY AS r(` + strings.Join(cols, ", ") + `, i)
JOIN ` + h.ident(t.Name) + ` p ON ` + on + ` AND ` + from + ` >= ` + l.fromExpr(t, "r.lo") + ` AND ` + from + ` <= ` + l.fromExpr(t, "r.hi") +
		` AND p.version <> ` + l.versionParam("r.v")
}

// queueOthers records, for each row of b, whether a lower or a higher version
// of its merge key is stored. It runs before the insert, under the series
// locks.
//
// A run of a series whose dictionary row the transaction inserted is not
// looked up: the dictionary's unique key made every other writer of that
// series wait for the transaction, and ids are per bucket, so no row of
// the series can be stored. The first delivery of a day, most of what a
// table receives, then costs no look-up.
//
// It queues its statement in q, to run after the series locks queued
// before it; the rows are marked as q's results are read.
func (h *Tier) queueOthers(q *pgx.Batch, t *series.Table, l layout, b *batch) {
	rs := slices.DeleteFunc(versionRuns(t, l, b.rows), func(r versionRun) bool { return b.rows[r.first].newSeries })
	if len(rs) == 0 {
		return
	}
	lo := make([]time.Time, len(rs))
	hi := make([]time.Time, len(rs))
	v := make([]string, len(rs))
	args := append([]any{lo, hi, v}, l.runArgs(t, b.rows, rs)...)
	for i, r := range rs {
		lo[i], hi[i], v[i] = r.lo, r.hi, strconv.FormatUint(uint64(b.rows[r.first].version), 10)
	}
	q.Queue(h.othersSQL(t, l), args...).Query(func(rows pgx.Rows) error {
		for rows.Next() {
			var i int32
			var from time.Time
			var version int64
			var scope string
			if err := rows.Scan(&i, &from, &version, &scope); err != nil {
				return err
			}
			r := rs[i-1]
			run := b.rows[r.first : r.first+r.n]
			k, ok := slices.BinarySearchFunc(run, from, func(s staged, f time.Time) int { return s.from.Compare(f) })
			if !ok {
				continue // another resolution's interval: another merge key
			}
			s := &run[k]
			if v := unbias(version); v > s.top || s.topScope == "" {
				s.top, s.topScope = v, scope
			}
			if unbias(version) > uint64(s.version) {
				s.higher = true
			} else {
				s.lower = true
			}
		}
		return rows.Err()
	})
}

// outcomes sets the status of every row of b not Present: what it did
// to its merge key, against the versions stored before it and those of
// earlier rows of the batch. Only a row whose merge key another row of
// the batch shares is looked up among the batch's.
func outcomes(t *series.Table, b *batch) {
	type key struct {
		series string
		from   int64
	}
	ident := t.Identity()
	var top map[key]uint64
	for i := range b.rows {
		s := &b.rows[i]
		higher, lower := s.higher, s.lower
		if s.shared {
			var sk strings.Builder
			sk.WriteString(s.src.MaLo)
			sk.WriteByte(0)
			sk.WriteString(s.src.OBIS)
			for _, c := range ident {
				sk.WriteByte(0)
				sk.WriteString(s.src.Extra[c.Name])
			}
			if top == nil {
				top = make(map[key]uint64)
			}
			k := key{sk.String(), s.from.UnixMicro()}
			v := uint64(s.version)
			prev, seen := top[k]
			higher = higher || seen && prev > v
			lower = lower || seen && prev < v
			if !seen || v > prev {
				top[k] = v
			}
		}
		if b.status[s.row] == series.Present {
			continue
		}
		switch {
		case higher:
			b.status[s.row] = series.Shadowed
		case lower:
			b.status[s.row] = series.Superseded
		default:
			b.status[s.row] = series.Inserted
		}
	}
}

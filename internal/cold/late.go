package cold

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/meterstore/meterstore/series"
)

// A LateResult reports what AppendLate did with each reading.
type LateResult struct {
	// Status is per reading, in order: Inserted, Present, Superseded or
	// Shadowed, decided by version as the hot tier decides it.
	Status     []series.Status
	Inserted   int
	Present    int
	Superseded int
	Shadowed   int
	Commit     Commit // the snapshot that added the readings not Present; zero if none
}

// lateAttempts bounds how often AppendLate re-checks a batch that lost a
// race against a concurrent commit.
const lateAttempts = 4

// AppendLate stores late corrections: readings below the watermark, which
// belong to the cold tier although the window they fall in was archived
// already. The batch is atomic. A reading whose merge key and version are
// stored already with the same content is Present and skipped; with a
// different content it is an integrity violation, and nothing is written.
// The snapshot re-stamps the unchanged watermark, so the newest snapshot
// still names the boundary.
//
// The check and the commit are one unit: the commit is refused if anything
// committed in between, and AppendLate then checks again.
func (c *Tier) AppendLate(ctx context.Context, t *Table, rows []series.Reading) (LateResult, error) {
	for attempt := 1; ; attempt++ {
		res, err := c.appendLate(ctx, t, rows)
		if errors.Is(err, table.ErrCommitFailed) && attempt < lateAttempts {
			continue
		}
		return res, err
	}
}

func (c *Tier) appendLate(ctx context.Context, t *Table, rows []series.Reading) (LateResult, error) {
	const op = "append late"
	if len(rows) == 0 {
		return LateResult{}, nil
	}
	ice, err := c.load(ctx, t)
	if err != nil {
		return LateResult{}, err
	}
	if ice, err = c.prepare(ctx, t, ice); err != nil {
		return LateResult{}, err
	}
	w, ok, err := Watermark(ice.Metadata())
	switch {
	case err != nil:
		return LateResult{}, fmt.Errorf("cold: %s %s: %w", op, t.decl.Name, err)
	case !ok:
		return LateResult{}, &series.Error{Kind: series.InvalidInput, Op: op, Table: t.decl.Name,
			Err: errors.New("the table has no watermark: nothing is archived, so no reading is late")}
	}
	// The one definition of a valid reading and of a conflict within a
	// batch, as the hot tier applies it.
	b, err := series.NewChecker(&t.decl, c.cal).CheckBatch(op, rows)
	if err != nil {
		return LateResult{}, err
	}
	var bad series.Problems
	for i := range rows {
		if !rows[i].From.Before(w) {
			bad.Add(i, "from %s is not below the watermark %s: the reading belongs to the hot tier", FormatTime(rows[i].From), FormatTime(w))
		}
		if rows[i].RecordedAt.IsZero() {
			bad.Add(i, "recorded_at is not set")
		}
		rows[i].BalancingDay = b.Derived[i].BalancingDay
	}
	if err := bad.Err(series.InvalidInput, op, t.decl.Name); err != nil {
		return LateResult{}, err
	}
	res := LateResult{Status: make([]series.Status, len(rows))}
	for i, rep := range b.Repeats {
		if rep {
			res.Status[i] = series.Present
		}
	}
	// Against the stored readings, by the rules of the hot tier's probe.
	stored, err := c.stored(ctx, t, ice, b)
	if err != nil {
		return LateResult{}, err
	}
	conflicts(&t.decl, b, stored, res.Status, &bad)
	if err := bad.Err(series.IntegrityViolation, op, t.decl.Name); err != nil {
		return LateResult{}, err
	}
	outcomes(&t.decl, b, stored, res.Status)

	var fresh []series.Reading
	for i, s := range res.Status {
		switch s {
		case series.Present:
			res.Present++
			continue
		case series.Superseded:
			res.Superseded++
		case series.Shadowed:
			res.Shadowed++
		default:
			res.Inserted++
		}
		fresh = append(fresh, rows[i])
	}
	if len(fresh) == 0 {
		return res, nil
	}
	enc, err := newEncoder(&t.decl, c.cal, op, ice.Schema(), c.opts.BatchRows)
	if err != nil {
		return LateResult{}, err
	}
	res.Commit, err = c.commit(ctx, t, ice, write{
		op:      op,
		enc:     enc,
		rows:    Readings(fresh),
		summary: lateSummary(w, fresh),
		rowsKey: SummaryLateRows,
		pin:     true, // checked against this snapshot only
	})
	if err != nil {
		return LateResult{}, err
	}
	return res, nil
}

// stored returns the readings of ice's snapshot that a batch could
// conflict with, by series and sorted by from and version: every reading of
// the batch's series that starts between the earliest start of a row or
// of an interval containing it and the latest end of a row.
func (c *Tier) stored(ctx context.Context, t *Table, ice *table.Table, b *series.Batch) (map[string][]series.Reading, error) {
	rows := b.Rows
	q := series.Range{From: rows[0].From, To: rows[0].From}
	malo, obis := map[string]bool{}, map[string]bool{}
	for i := range rows {
		r := &rows[i]
		q.From = minTime(q.From, r.From)
		for _, a := range b.Derived[i].Ancestors {
			q.From = minTime(q.From, a)
		}
		q.To = maxTime(q.To, maxTime(r.To, r.From.Add(time.Microsecond)))
		malo[r.MaLo], obis[r.OBIS] = true, true
	}
	q.MaLo = slices.Sorted(maps.Keys(malo))
	q.OBIS = slices.Sorted(maps.Keys(obis))
	want := make(map[string]bool, len(rows))
	for i := range rows {
		want[seriesKey(&t.decl, &rows[i])] = true
	}
	out := make(map[string][]series.Reading)
	for r, err := range c.scan(ctx, t, ice, q) {
		if err != nil {
			return nil, err
		}
		if k := seriesKey(&t.decl, &r); want[k] {
			out[k] = append(out[k], r)
		}
	}
	for _, rs := range out {
		slices.SortFunc(rs, func(a, b series.Reading) int {
			if c := a.From.Compare(b.From); c != 0 {
				return c
			}
			return cmp.Compare(a.Version, b.Version)
		})
	}
	return out, nil
}

// conflicts checks the rows of b that are not repeats against the stored
// readings of their series: the same key and version stored identically
// makes a row Present, differently a restatement; another version of the
// same reading from another network operator, or a reading of the same
// version overlapping the row's interval, is a conflict.
func conflicts(t *series.Table, b *series.Batch, stored map[string][]series.Reading, status []series.Status, bad *series.Problems) {
	for i := range b.Rows {
		if status[i] == series.Present {
			continue
		}
		r := &b.Rows[i]
		have := stored[seriesKey(t, r)]
		// The stored readings that start within r's interval.
		end := r.To
		if t.TimeModel == series.Point {
			end = r.From.Add(time.Microsecond)
		}
		lo, _ := slices.BinarySearchFunc(have, r.From, func(p series.Reading, at time.Time) int { return p.From.Compare(at) })
		for k := lo; k < len(have) && have[k].From.Before(end); k++ {
			p := &have[k]
			switch {
			case p.From.Equal(r.From) && p.Version == r.Version:
				if col, was, is := t.Restated(p, r); col != "" {
					bad.Add(i, "restates version %d: %s %s, stored %s", p.Version, col, is, was)
				} else {
					status[i] = series.Present
				}
			case p.From.Equal(r.From):
				if op, other := r.NetworkOperator(), p.NetworkOperator(); op != other {
					bad.Add(i, "network operator %s, but version %d of the reading is stored from %s", op, p.Version, other)
				}
			case p.Version == r.Version:
				bad.Add(i, "overlaps the stored %s interval from %s within version %d", p.Resolution, FormatTime(p.From), p.Version)
			}
		}
		// A stored coarser interval of the same version containing r
		// starts at one of r's ancestors.
		for _, a := range b.Derived[i].Ancestors {
			k, _ := slices.BinarySearchFunc(have, a, func(p series.Reading, at time.Time) int { return p.From.Compare(at) })
			for ; k < len(have) && have[k].From.Equal(a); k++ {
				if p := &have[k]; p.Version == r.Version && p.To.After(r.From) {
					bad.Add(i, "overlaps the stored %s interval from %s within version %d", p.Resolution, FormatTime(p.From), p.Version)
				}
			}
		}
	}
}

// outcomes sets the status of every row of b not Present, as the hot
// tier's outcomes do: Shadowed if a higher version of its merge key is
// stored or came earlier in the batch, else Superseded if a lower one
// is or did, else Inserted.
func outcomes(t *series.Table, b *series.Batch, stored map[string][]series.Reading, status []series.Status) {
	type key struct {
		series string
		from   int64
	}
	top := make(map[key]uint64, len(b.Rows))
	for i := range b.Rows {
		r := &b.Rows[i]
		sk := seriesKey(t, r)
		var higher, lower bool
		have := stored[sk]
		lo, _ := slices.BinarySearchFunc(have, r.From, func(p series.Reading, at time.Time) int { return p.From.Compare(at) })
		for k := lo; k < len(have) && have[k].From.Equal(r.From); k++ {
			higher = higher || have[k].Version > r.Version
			lower = lower || have[k].Version < r.Version
		}
		k := key{sk, r.From.UnixMicro()}
		prev, seen := top[k]
		higher = higher || seen && prev > r.Version
		lower = lower || seen && prev < r.Version
		if !seen || r.Version > prev {
			top[k] = r.Version
		}
		switch {
		case status[i] == series.Present:
		case higher:
			status[i] = series.Shadowed
		case lower:
			status[i] = series.Superseded
		default:
			status[i] = series.Inserted
		}
	}
}

// seriesKey returns the series of r: market location, OBIS code and
// identity columns.
func seriesKey(t *series.Table, r *series.Reading) string {
	var b strings.Builder
	b.WriteString(r.MaLo)
	b.WriteByte(0)
	b.WriteString(r.OBIS)
	for _, c := range t.Columns {
		if c.Identity {
			b.WriteByte(0)
			b.WriteString(r.Extra[c.Name])
		}
	}
	return b.String()
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// lateSummary returns the summary of a commit of the late corrections
// rows, below watermark w.
func lateSummary(w time.Time, rows []series.Reading) iceberg.Properties {
	lo, hi := rows[0].From, rows[0].From
	for i := range rows {
		lo, hi = minTime(lo, rows[i].From), maxTime(hi, rows[i].From)
	}
	return iceberg.Properties{SummaryWatermark: FormatTime(w),
		SummaryLateFrom: FormatTime(lo), SummaryLateTo: FormatTime(hi.Add(time.Microsecond))}
}

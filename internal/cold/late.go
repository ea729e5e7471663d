package cold

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/meterstore/meterstore/internal/hot"
)

// A LateResult reports what AppendLate did with each reading.
type LateResult struct {
	Status   []hot.Status // per reading, in order: Inserted or Present
	Inserted int
	Present  int
	Commit   Commit // the snapshot that added the Inserted ones; zero if none
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
func (c *Tier) AppendLate(ctx context.Context, t *Table, rows []hot.Reading) (LateResult, error) {
	for attempt := 1; ; attempt++ {
		res, err := c.appendLate(ctx, t, rows)
		if errors.Is(err, table.ErrCommitFailed) && attempt < lateAttempts {
			continue
		}
		return res, err
	}
}

func (c *Tier) appendLate(ctx context.Context, t *Table, rows []hot.Reading) (LateResult, error) {
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
		return LateResult{}, &hot.Error{Kind: hot.InvalidInput, Op: op, Table: t.decl.Name,
			Err: errors.New("the table has no watermark: nothing is archived, so no reading is late")}
	}
	res := LateResult{Status: make([]hot.Status, len(rows))}
	var bad problems
	codes := newCodes()
	for i := range rows {
		r := &rows[i]
		if reason := codes.invalid(&t.decl, r); reason != "" {
			bad.add(i, reason)
		} else if !r.From.Before(w) {
			bad.add(i, fmt.Sprintf("from %s is not below the watermark %s: the reading belongs to the hot tier", FormatTime(r.From), FormatTime(w)))
		}
	}
	if err := bad.err(hot.InvalidInput, op, t.decl.Name); err != nil {
		return LateResult{}, err
	}

	// Within the batch: a repeated reading is a redelivery, a restated
	// one a violation.
	first := make(map[string]int, len(rows))
	for i := range rows {
		k := rowKey(&t.decl, &rows[i])
		j, seen := first[k]
		if !seen {
			first[k] = i
			continue
		}
		if d := difference(&t.decl, &rows[j], &rows[i]); d != "" {
			bad.add(i, fmt.Sprintf("restates row %d under the same key and version: %s", j, d))
		}
		res.Status[i] = hot.Present
	}
	// Against the stored readings of the same keys.
	stored, err := c.stored(ctx, t, ice, rows)
	if err != nil {
		return LateResult{}, err
	}
	for k, i := range first {
		s, ok := stored[k]
		if !ok {
			continue
		}
		if d := difference(&t.decl, &s, &rows[i]); d != "" {
			bad.add(i, "restates a stored reading under the same key and version: "+d)
		}
		res.Status[i] = hot.Present
	}
	if err := bad.err(hot.IntegrityViolation, op, t.decl.Name); err != nil {
		return LateResult{}, err
	}

	var fresh []hot.Reading
	for i, s := range res.Status {
		if s == hot.Present {
			res.Present++
			continue
		}
		res.Status[i] = hot.Inserted
		res.Inserted++
		fresh = append(fresh, rows[i])
	}
	if len(fresh) == 0 {
		return res, nil
	}
	enc, err := newEncoder(&t.decl, op, ice.Schema(), c.opts.BatchRows)
	if err != nil {
		return LateResult{}, err
	}
	res.Commit, err = c.commit(ctx, t, ice, write{
		op:      op,
		enc:     enc,
		rows:    Readings(fresh),
		summary: iceberg.Properties{SummaryWatermark: FormatTime(w)},
		rowsKey: SummaryLateRows,
		pin:     true, // checked against this snapshot only
	})
	if err != nil {
		return LateResult{}, err
	}
	return res, nil
}

// stored returns the readings of ice's snapshot that share a merge key and
// version with one of rows, by rowKey.
func (c *Tier) stored(ctx context.Context, t *Table, ice *table.Table, rows []hot.Reading) (map[string]hot.Reading, error) {
	q := hot.Query{From: rows[0].From, To: rows[0].From}
	malo, obis := map[string]bool{}, map[string]bool{}
	for i := range rows {
		r := &rows[i]
		q.From = minTime(q.From, r.From)
		q.To = maxTime(q.To, r.From)
		malo[r.MaLo], obis[r.OBIS] = true, true
	}
	q.To = q.To.Add(time.Microsecond)
	for k := range malo {
		q.MaLo = append(q.MaLo, k)
	}
	for k := range obis {
		q.OBIS = append(q.OBIS, k)
	}
	slices.Sort(q.MaLo)
	slices.Sort(q.OBIS)
	want := make(map[string]bool, len(rows))
	for i := range rows {
		want[rowKey(&t.decl, &rows[i])] = true
	}
	out := make(map[string]hot.Reading)
	for r, err := range c.scan(ctx, t, ice, q) {
		if err != nil {
			return nil, err
		}
		if k := rowKey(&t.decl, &r); want[k] {
			out[k] = r
		}
	}
	return out, nil
}

// rowKey returns the primary key of r: merge key and version.
func rowKey(t *hot.Table, r *hot.Reading) string {
	var b strings.Builder
	b.WriteString(r.MaLo)
	b.WriteByte(0)
	b.WriteString(r.OBIS)
	b.WriteByte(0)
	b.WriteString(strconv.FormatInt(r.From.UnixMicro(), 10))
	for _, c := range t.Columns {
		if c.Identity {
			b.WriteByte(0)
			b.WriteString(r.Extra[c.Name])
		}
	}
	b.WriteByte(0)
	b.WriteString(strconv.FormatUint(r.Version, 10))
	return b.String()
}

// difference describes how two readings of the same key and version differ
// in what they state, or returns "". The transaction time and the derived
// balancing day are not statements of the reading.
func difference(t *hot.Table, a, b *hot.Reading) string {
	diff := func(col string, x, y any) string { return fmt.Sprintf("%s %v, now %v", col, x, y) }
	switch {
	case a.Value != b.Value:
		return diff("value", a.Value, b.Value)
	case !a.To.Equal(b.To):
		return diff("to", FormatTime(a.To), FormatTime(b.To))
	case a.Unit != b.Unit:
		return diff("unit", a.Unit, b.Unit)
	case a.Quality != b.Quality:
		return diff("quality", a.Quality, b.Quality)
	case a.Resolution != b.Resolution:
		return diff("resolution", a.Resolution, b.Resolution)
	case commodity(t, a) != commodity(t, b):
		return diff("sparte", commodity(t, a), commodity(t, b))
	case a.MeLo != b.MeLo:
		return diff("melo_id", a.MeLo, b.MeLo)
	case a.VersionScope != b.VersionScope:
		return diff("version_scope", a.VersionScope, b.VersionScope)
	case a.Subject != b.Subject:
		return diff("subject_id", a.Subject, b.Subject)
	}
	for _, c := range t.Columns {
		x, xok := a.Extra[c.Name]
		y, yok := b.Extra[c.Name]
		if x != y || xok != yok {
			return diff(c.Name, x, y)
		}
	}
	return ""
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

// problems collects the offending rows of a batch.
type problems struct {
	seen map[int]bool
	rows []int
	list []hot.Problem
}

func (p *problems) add(row int, reason string) {
	if p.seen[row] {
		return // the first reason found for a row is enough
	}
	if p.seen == nil {
		p.seen = make(map[int]bool)
	}
	p.seen[row] = true
	p.rows = append(p.rows, row)
	p.list = append(p.list, hot.Problem{Row: row, Reason: reason})
}

// err returns the problems as a *hot.Error of kind k, or nil.
func (p *problems) err(k hot.Kind, op, table string) error {
	if len(p.rows) == 0 {
		return nil
	}
	slices.Sort(p.rows)
	slices.SortFunc(p.list, func(a, b hot.Problem) int { return a.Row - b.Row })
	list := p.list[:min(len(p.list), 100):min(len(p.list), 100)] // as the hot tier keeps them
	return &hot.Error{Kind: k, Op: op, Table: table, Rows: p.rows, Problems: list}
}

package store

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/internal/hot"
	"github.com/meterstore/meterstore/series"
)

// WriteResult reports per row what the write did with it (series.Status:
// inserted, present, superseded, shadowed, or refused with the reason the
// error gives), the counts of each, and how many rows went to the cold
// tier as late corrections.
type WriteResult struct {
	// Result holds a status per row, in order, their counts, and for
	// substitute values the version each row was given.
	series.Result
	Late int // rows routed to the cold tier as late corrections
}

// Write stores rows in table name. Rows whose interval starts below the
// watermark go to the cold tier as one append, the rest to PostgreSQL as
// one atomic batch; a bad row fails its part with an error naming it.
// Redelivering identical rows is a no-op, so retrying a failed call is
// safe.
//
// A row for a day without a partition gets one, unless the day lies more
// than HotOptions.AcceptAhead past now (InvalidInput, naming the row). The
// watermark routed by is the last one read, so rows at or above it are
// stored while the cold tier is unreachable; a batch with rows below it
// then fails whole, retryably, with an error wrapping ErrColdUnreachable.
//
// A quarantine refuses no delivery PostgreSQL can hold. A table whose
// declared change of columns the hot tier refused takes every batch its
// stored columns hold, once the declaration accepts it too; one they
// cannot hold (a column it does not have, an identity value it lacks) is
// refused as retryable, wrapping the *QuarantineError, and so is a late
// correction into a quarantined cold tier: either goes through once an
// operator has resolved the quarantine.
func (s *Store) Write(ctx context.Context, name string, rows []Reading) (WriteResult, error) {
	return s.WriteWith(ctx, name, rows, WriteOptions{})
}

// ColumnSubstitutedBy is the text column a table declares to record who
// appended a substitute value (WriteOptions.Substitute); recorded_at says
// when. Its values are bounded as series.CheckAttribution says.
const ColumnSubstitutedBy = series.ColumnSubstitutedBy

// WriteOptions change how Write stores a batch.
type WriteOptions struct {
	// Substitute appends substitute values (Ersatzwerte) authoritatively:
	// every row has quality 67 and no version (zero), and is given the
	// version one above the highest stored for its reading, so it wins
	// over what is stored (its status is Superseded, or Inserted when
	// nothing was); WriteResult.Versions holds the version each row was
	// given. Refused, nothing written, for a row whose stored
	// versions are of another version scope, below the watermark, or in a
	// table that does not declare ColumnSubstitutedBy.
	Substitute bool
	// By names who forms the substitute values, such as the metering
	// point operator's market partner id; required with Substitute and
	// recorded in ColumnSubstitutedBy: plain text of at most
	// series.MaxAttributionLen bytes (series.CheckAttribution).
	By string
	// Source says where the batch came from, recorded in the table's
	// provenance columns (series.ColumnSourceKind, ColumnSourceRef) for
	// every row that sets neither itself. A table without them records
	// nothing; an empty field leaves its column NULL. A field the table
	// records is held to series.CheckAttribution, and refuses the batch
	// before any row is looked at.
	Source Source
}

// A Source is where a delivery of readings came from.
type Source struct {
	// Kind is the kind of source: series.SourceMSCONS, SourceCSV,
	// SourceJSON or SourceAPI.
	Kind string
	// Ref names the delivery: a file name or the caller's reference.
	Ref string
}

// WriteWith is Write with options.
func (s *Store) WriteWith(ctx context.Context, name string, rows []Reading, o WriteOptions) (WriteResult, error) {
	w := s.admitWrite(ctx, name, rows, o)
	if w.err != nil {
		return w.early, w.err
	}
	routed, err := s.router.WriteWith(ctx, w.decl, w.ct, w.rows, hot.WriteOptions{Substitute: o.Substitute})
	return s.account(ctx, name, WriteResult(routed), err)
}

// An admitted write is a batch as the router takes it: checked against a
// quarantine, with its substitutes' author and its source filled in; or
// the error, and the result, of a batch refused before that.
type admitted struct {
	decl  *series.Table
	ct    *cold.Table
	rows  []Reading
	early WriteResult
	err   error
}

// admitWrite does what Write does with rows before it routes them.
func (s *Store) admitWrite(ctx context.Context, name string, rows []Reading, o WriteOptions) admitted {
	t, ct, _, err := s.openedHot(ctx, name)
	if err == nil {
		// A write goes to PostgreSQL: not before its table is ensured.
		err = t.hotState()
	}
	if err != nil {
		return admitted{err: err}
	}
	decl, quarantine := t.running()
	if quarantine != nil {
		if err := admit(t.decl, decl, quarantine, rows); err != nil {
			res := WriteResult{Result: series.Result{Status: make([]series.Status, len(rows))}}
			refuse(&res, err)
			return admitted{early: res, err: err}
		}
	}
	if o.Substitute {
		if rows, err = substitutes(decl, rows, o.By); err != nil {
			return admitted{err: err}
		}
	}
	if rows, err = withSource(decl, rows, o.Source); err != nil {
		return admitted{err: err}
	}
	return admitted{decl: decl, ct: ct, rows: rows}
}

// account marks the rows err names as refused in res and counts the
// write's outcomes in the metrics.
func (s *Store) account(ctx context.Context, name string, res WriteResult, err error) (WriteResult, error) {
	refuse(&res, err)
	s.metrics.Written(ctx, name, int64(res.Inserted+res.Superseded+res.Shadowed), int64(res.Present))
	for _, o := range []struct {
		s series.Status
		n int
	}{{series.Inserted, res.Inserted}, {series.Present, res.Present}, {series.Superseded, res.Superseded},
		{series.Shadowed, res.Shadowed}, {series.Refused, res.Refused}} {
		s.metrics.WriteOutcomes(ctx, name, o.s.String(), int64(o.n))
	}
	if res.Late > 0 {
		s.metrics.LateCorrections(ctx, name, int64(res.Late))
	}
	return res, err
}

// substitutes returns rows with by recorded in ColumnSubstitutedBy, or
// an error if table t has no such column or by is empty.
func substitutes(t *series.Table, rows []Reading, by string) ([]Reading, error) {
	if by == "" {
		return nil, &series.Error{Kind: series.InvalidInput, Op: "write", Table: t.Name,
			Err: errors.New("substitute values need WriteOptions.By, who formed them")}
	}
	if err := series.CheckAttribution(by); err != nil {
		return nil, &series.Error{Kind: series.InvalidInput, Op: "write", Table: t.Name,
			Err: fmt.Errorf("who formed the substitute values (WriteOptions.By, recorded in %s): %w", ColumnSubstitutedBy, err)}
	}
	if !slices.ContainsFunc(t.Columns, func(c series.Column) bool {
		return c.Name == ColumnSubstitutedBy && !c.Identity && c.ColumnType() == series.Text
	}) {
		return nil, &series.Error{Kind: series.InvalidInput, Op: "write", Table: t.Name,
			Err: fmt.Errorf("substitute values are recorded in a text column %s, which the table does not declare", ColumnSubstitutedBy)}
	}
	out := make([]Reading, len(rows))
	for i, r := range rows {
		extra := make(map[string]string, len(r.Extra)+1)
		maps.Copy(extra, r.Extra)
		extra[ColumnSubstitutedBy] = by
		r.Extra = extra
		out[i] = r
	}
	return out, nil
}

// withSource returns rows with src recorded in t's provenance columns
// where a row sets neither; rows itself is left as it is. Rows without
// extra columns share one map, which the write only reads. A field of src
// that t records must pass series.CheckAttribution: one error naming the
// field, rather than the same one for every row.
func withSource(t *series.Table, rows []Reading, src Source) ([]Reading, error) {
	fill := map[string]string{}
	for _, c := range t.Columns {
		field, v := "", ""
		switch {
		case c.Name == series.ColumnSourceKind && src.Kind != "":
			field, v = "kind", src.Kind
		case c.Name == series.ColumnSourceRef && src.Ref != "":
			field, v = "reference", src.Ref
		default:
			continue
		}
		if err := series.CheckAttribution(v); err != nil {
			return nil, &series.Error{Kind: series.InvalidInput, Op: "write", Table: t.Name,
				Err: fmt.Errorf("the delivery's source %s (recorded in %s): %w", field, c.Name, err)}
		}
		fill[c.Name] = v
	}
	if len(fill) == 0 {
		return rows, nil
	}
	var out []Reading
	for i := range rows {
		e := rows[i].Extra
		if _, ok := e[series.ColumnSourceKind]; ok {
			continue
		}
		if _, ok := e[series.ColumnSourceRef]; ok {
			continue
		}
		if out == nil {
			out = slices.Clone(rows)
		}
		if len(e) == 0 {
			out[i].Extra = fill
			continue
		}
		extra := maps.Clone(e)
		maps.Copy(extra, fill)
		out[i].Extra = extra
	}
	if out == nil {
		return rows, nil
	}
	return out, nil
}

// refuse marks the rows err names as Refused in res: their reasons are
// the error's Problems.
func refuse(res *WriteResult, err error) {
	var e *series.Error
	if !errors.As(err, &e) {
		return
	}
	for _, i := range e.Rows {
		if i >= 0 && i < len(res.Status) && res.Status[i] == 0 {
			res.Status[i] = series.Refused
			res.Refused++
		}
	}
}

// admit checks the columns of rows for a table quarantined by quarantine,
// declared as decl and stored as stored: a row decl refuses fails the
// batch as InvalidInput, as it would without the quarantine; one whose
// columns stored cannot hold fails it as Unavailable, retryable.
func admit(decl, stored *series.Table, quarantine error, rows []Reading) error {
	var bad, held series.Problems
	for i := range rows {
		if err := decl.CheckColumns(&rows[i]); err != nil {
			bad.Add(i, "%v", err)
		} else if err := stored.CheckColumns(&rows[i]); err != nil {
			held.Add(i, "%v, as the table is stored", err)
		}
	}
	if err := bad.Err(series.InvalidInput, "write", decl.Name); err != nil {
		return err
	}
	if err := held.Err(series.Unavailable, "write", decl.Name); err != nil {
		e := err.(*series.Error)
		e.Err = fmt.Errorf("its stored columns cannot hold these rows until an operator resolves the quarantine; retry then: %w", quarantine)
		return e
	}
	return nil
}

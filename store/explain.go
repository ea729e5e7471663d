package store

import (
	"context"
	"fmt"
	"time"

	"github.com/meterstore/meterstore/series"
)

// A TableExplanation is what a statement would read of one table.
type TableExplanation struct {
	Table string
	// Range bounds the values of "from" the statement can read, a zero
	// bound being open, and its market locations, if it names them.
	Range series.Range
	// Watermark is the table's W now, if HasWatermark.
	Watermark    time.Time
	HasWatermark bool
	// Cold is set when the range reaches below W: ColdFiles are the data
	// files of snapshot Snapshot its plan keeps, ColdBytes their size.
	Cold      bool
	Snapshot  int64
	ColdFiles []string
	ColdBytes int64
	// Hot is set when the range reaches W or above, or nothing is
	// archived: HotPartitions are the attached partitions it overlaps.
	Hot           bool
	HotPartitions []string
}

// Explain says what a statement with default table name (none if empty),
// as Query runs it, would read of each table, reading no row and no data
// file; see Statement.Explain. The statement is prepared and refused as
// Prepare refuses it, with may.
func (s *Store) Explain(ctx context.Context, name, sql string, may func(table string) bool) ([]TableExplanation, error) {
	st, err := s.Prepare(ctx, sql, StatementOptions{Table: name, May: may})
	if err != nil {
		return nil, err
	}
	defer st.Close()
	return st.Explain(ctx)
}

// Explain says what the statement would read of each table it reads,
// reading no row and no data file: its analysis (the tables, the range of
// "from" of each and its market locations, with the values of its
// parameters), each table's watermark, the cold files its plan keeps
// (from the manifests, whose statistics prune them) and the hot
// partitions the range overlaps. It does not run the statement, which
// may still run or be closed.
func (st *Statement) Explain(ctx context.Context) ([]TableExplanation, error) {
	var out []TableExplanation
	for _, r := range st.st.Ranges() {
		x, err := st.s.explainTable(ctx, r.Table, r.Range)
		if err != nil {
			return nil, err
		}
		out = append(out, x)
	}
	return out, nil
}

// explainTable decides the tiers of range r of table name as a query
// does: the cold tier below W, the hot tier from W on.
func (s *Store) explainTable(ctx context.Context, name string, r series.Range) (TableExplanation, error) {
	x := TableExplanation{Table: name, Range: r}
	if r.Empty() {
		return x, nil
	}
	t, ct, _, err := s.opened(ctx, name)
	if err != nil {
		return x, err
	}
	plan, err := s.cold.Plan(ctx, ct, r)
	if err != nil {
		return x, fmt.Errorf("store: explain %s: %w: %w", name, ErrColdUnreachable, err)
	}
	x.Watermark, x.HasWatermark = plan.Watermark, plan.HasWatermark
	x.Cold = plan.HasWatermark && (r.From.IsZero() || r.From.Before(plan.Watermark))
	x.Hot = !plan.HasWatermark || r.To.IsZero() || r.To.After(plan.Watermark)
	if x.Cold {
		x.Snapshot, x.ColdFiles, x.ColdBytes = plan.SnapshotID, plan.Files, plan.Bytes
	}
	if !x.Hot {
		return x, nil
	}
	lo := r.From
	if plan.HasWatermark && (lo.IsZero() || lo.Before(plan.Watermark)) {
		lo = plan.Watermark
	}
	parts, err := s.hot.Partitions(ctx, t.decl)
	if err != nil {
		return x, fmt.Errorf("store: explain %s: %w", name, err)
	}
	for _, p := range parts {
		if p.Attached && p.To.After(lo) && (r.To.IsZero() || p.From.Before(r.To)) {
			x.HotPartitions = append(x.HotPartitions, p.Name)
		}
	}
	return x, nil
}

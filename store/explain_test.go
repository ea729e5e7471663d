package store

import (
	"database/sql"
	"slices"
	"testing"
)

// TestExplainParameters: Statement.Explain bounds what it explains by the
// values bound to the statement's parameters, positional or named, as it
// does by the same values written as literals: the range of "from", the
// market locations and the hot partitions of that one day. The statement
// with its placeholders left unbound reads every partition, so an Explain
// that ignored the parameters would show an open range.
func TestExplainParameters(t *testing.T) {
	ctx := t.Context()
	s := newStore(t)
	if err := s.CreatePartitions(ctx, dayN(0), dayN(4)); err != nil {
		t.Fatal(err)
	}
	explain := func(sql string, params []any) TableExplanation {
		t.Helper()
		st, err := s.Prepare(ctx, sql, StatementOptions{Table: "power", Params: params})
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		defer st.Close()
		xs, err := st.Explain(ctx)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		if len(xs) != 1 || xs[0].Table != "power" {
			t.Fatalf("%s: %+v, want power alone", sql, xs)
		}
		return xs[0]
	}
	literal := explain(`SELECT count(*) FROM readings WHERE "from" >= `+ts(dayN(1))+` AND "from" < `+ts(dayN(2))+` AND malo_id = '`+malo(1)+`'`, nil)
	if !literal.Range.From.Equal(dayN(1)) || !literal.Range.To.Equal(dayN(2)) || !slices.Equal(literal.Range.MaLo, []string{malo(1)}) ||
		!literal.Hot || literal.Cold || len(literal.HotPartitions) != 1 {
		t.Fatalf("literals: %+v, want day 1 of %s, its one hot partition", literal, malo(1))
	}
	open := explain(`SELECT count(*) FROM readings WHERE "from" >= $1 AND "from" < $2 AND malo_id = $3`, nil)
	if !open.Range.From.IsZero() || !open.Range.To.IsZero() || open.Range.MaLo != nil || len(open.HotPartitions) < 4 {
		t.Fatalf("placeholders unbound: %+v, want an open range over every partition", open)
	}
	for _, c := range []struct {
		sql    string
		params []any
	}{
		{`SELECT count(*) FROM readings WHERE "from" >= $1 AND "from" < $2 AND malo_id = $3`, []any{dayN(1), dayN(2), malo(1)}},
		{`SELECT count(*) FROM readings WHERE "from" >= $lo AND "from" < $hi AND malo_id = $malo`,
			[]any{sql.Named("lo", dayN(1)), sql.Named("hi", dayN(2)), sql.Named("malo", malo(1))}},
	} {
		got := explain(c.sql, c.params)
		if !got.Range.From.Equal(literal.Range.From) || !got.Range.To.Equal(literal.Range.To) ||
			!slices.Equal(got.Range.MaLo, literal.Range.MaLo) || !slices.Equal(got.HotPartitions, literal.HotPartitions) {
			t.Errorf("%s with %v:\n %+v\nwant the literals' %+v", c.sql, c.params, got, literal)
		}
	}
}

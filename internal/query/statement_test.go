package query

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestPrepareRefusesBeforeReading: a statement over gas that reads
// power.readings, prepared for a caller that may read gas alone, is
// refused with a *ForbiddenError naming power, the same error whether the
// condition on power's values holds or not, and neither table's tiers are
// touched: no watermark, hot scan or cold plan of either. The bisection
// this closes: a statement that fails only when a value of power passes a
// bound would otherwise tell the bound by its error.
func TestPrepareRefusesBeforeReading(t *testing.T) {
	tt := newTwoTables(t)
	gasOnly := func(name string) bool { return name == "gas" }
	tt.power.Calls()
	tt.gas.Calls()
	var msgs []string
	for _, bound := range []string{"0", "1000000"} {
		sql := fmt.Sprintf(`SELECT CASE WHEN (SELECT max(value) FROM power.readings WHERE "from" >= '2026-02-01 00:00:00Z') > %s
			THEN error('above') END AS probe, count(*) FROM readings`, bound)
		// Without the check the bisection works: one bound fails, the
		// other answers, so the statement does read power's values.
		_, err := queryOf(t.Context(), tt.eGas, sql)
		if (bound == "0") != errors.Is(err, ErrInvalidQuery) {
			t.Fatalf("bound %s, every table allowed: %v", bound, err)
		}
		tt.power.Calls()
		tt.gas.Calls()

		st, err := tt.eGas.Prepare(t.Context(), sql, PrepareOptions{May: gasOnly, Table: tt.eGas.first()})
		var fe *ForbiddenError
		if !errors.As(err, &fe) || !errors.Is(err, ErrForbidden) || !slices.Equal(fe.Tables, []string{"power"}) {
			if st != nil {
				st.Close()
			}
			t.Fatalf("bound %s: %v, want a *ForbiddenError naming power", bound, err)
		}
		msgs = append(msgs, err.Error())
		if calls := append(tt.power.Calls(), tt.gas.Calls()...); len(calls) != 0 {
			t.Fatalf("bound %s: a refused statement read the tiers: %v", bound, calls)
		}
	}
	if msgs[0] != msgs[1] {
		t.Fatalf("the refusal depends on the data: %q and %q", msgs[0], msgs[1])
	}

	// A name that is no table is refused for a caller who may not read it,
	// as a declared one is: the refusal does not tell which names exist.
	_, err := tt.eGas.Prepare(t.Context(), `SELECT count(*) FROM nosuch.readings`, PrepareOptions{May: gasOnly, Table: tt.eGas.first()})
	if !errors.Is(err, ErrForbidden) {
		t.Fatalf("an undeclared table for a limited caller: %v", err)
	}
	if _, err := tt.eGas.Prepare(t.Context(), `SELECT count(*) FROM nosuch.readings`, PrepareOptions{Table: tt.eGas.first()}); !errors.Is(err, ErrInvalidQuery) {
		t.Fatalf("an undeclared table for an unlimited caller: %v", err)
	}

	// Allowed, it reads what it names.
	st, err := tt.eGas.Prepare(t.Context(), `SELECT count(*) FROM readings, power.readings`, PrepareOptions{Table: tt.eGas.first()})
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Tables(); !slices.Equal(got, []string{"gas", "power"}) {
		t.Errorf("Tables %v", got)
	}
	st.Close()
	st, err = tt.eGas.Prepare(t.Context(), `SELECT 1`, PrepareOptions{May: gasOnly, Table: tt.eGas.first()})
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Tables(); len(got) != 0 {
		t.Errorf("a statement reading no table: Tables %v", got)
	}
	if err := st.Stream(t.Context(), func(*Header) error { return nil }, func([]any) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := st.Stream(t.Context(), func(*Header) error { return nil }, func([]any) error { return nil }); err == nil {
		t.Fatal("a statement streamed twice")
	}
}

// TestPrepareShowsVisibleSystemRows: the system relations a limited caller
// sees hold only its tables' rows; an unlimited caller sees them all.
func TestPrepareShowsVisibleSystemRows(t *testing.T) {
	tt := newTwoTables(t)
	tt.eGas.SetRelations([]Relation{{Schema: "system", Name: "tables",
		Columns: []Column{{Name: "table", Type: "VARCHAR"}, {Name: "healthy", Type: "BOOLEAN"}},
		Rows:    [][]any{{"power", true}, {"gas", false}}}})
	read := func(may func(string) bool) []string {
		st, err := tt.eGas.Prepare(t.Context(), `SELECT "table" FROM system.tables ORDER BY 1`, PrepareOptions{May: may, Table: tt.eGas.first()})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		err = st.Stream(t.Context(), func(*Header) error { return nil }, func(v []any) error {
			out = append(out, text(v[0]))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	if got := read(func(name string) bool { return name == "gas" }); !slices.Equal(got, []string{"gas"}) {
		t.Errorf("gas only: %v", got)
	}
	if got := read(nil); !slices.Equal(got, []string{"gas", "power"}) {
		t.Errorf("every table: %v", got)
	}
}

// TestPrepareWithoutDefault: without a default table every relation names
// its table, the engine's own included, and the answer is the one each
// table gives as its own default; an unqualified relation is refused; a
// statement of another table's completeness runs on that table.
func TestPrepareWithoutDefault(t *testing.T) {
	tt := newTwoTables(t)
	run := func(e *Engine, sql string, o PrepareOptions) ([]string, []string, error) {
		st, err := e.Prepare(t.Context(), sql, o)
		if err != nil {
			return nil, nil, err
		}
		tables := st.Tables()
		var rows []string
		err = st.Stream(t.Context(), func(*Header) error { return nil }, func(v []any) error {
			rows = append(rows, fmt.Sprint(v))
			return nil
		})
		return tables, rows, err
	}
	const where = ` WHERE "from" >= '2026-01-30 00:00:00Z' AND "from" < '2026-03-02 00:00:00Z'`
	want := fmt.Sprint(count(t, tt.ePower, `SELECT count(*) FROM readings`+where), " ", count(t, tt.eGas, `SELECT count(*) FROM readings`+where))
	for _, host := range []*Engine{tt.ePower, tt.eGas} {
		tables, rows, err := run(host, `SELECT (SELECT count(*) FROM power.readings`+where+`) || ' ' || (SELECT count(*) FROM gas.readings`+where+`)`, PrepareOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(tables, []string{"gas", "power"}) || len(rows) != 1 || rows[0] != "["+want+"]" {
			t.Errorf("on %s: tables %v, rows %v; want [%s]", host.first(), tables, rows, want)
		}
		if _, _, err := run(host, `SELECT count(*) FROM readings`, PrepareOptions{}); !errors.Is(err, ErrUnqualified) || !errors.Is(err, ErrInvalidQuery) {
			t.Errorf("on %s, unqualified: %v", host.first(), err)
		}
	}
	// power's completeness, prepared on gas's engine without a default.
	wantDays := query(t, tt.ePower, `SELECT count(*) FROM completeness WHERE balancing_day = DATE '2026-02-01'`).Rows
	tables, rows, err := run(tt.eGas, `SELECT count(*) FROM power.completeness WHERE balancing_day = DATE '2026-02-01'`, PrepareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(tables, []string{"power"}) || len(rows) != 1 || rows[0] != fmt.Sprint(wantDays[0]) {
		t.Errorf("power.completeness on gas: tables %v rows %v; want %v", tables, rows, wantDays)
	}
	if _, _, err := run(tt.eGas, `SELECT count(*) FROM power.completeness`, PrepareOptions{May: func(n string) bool { return n == "gas" }}); !errors.Is(err, ErrForbidden) {
		t.Errorf("power.completeness for a gas-only caller: %v", err)
	}
}

// TestStatementBound: a statement longer than MaxStatementBytes is an
// invalid statement, refused before DuckDB parses it and before anything
// is read; one of the bound runs.
func TestStatementBound(t *testing.T) {
	s := threeMonths(t)
	e := newEngine(t, s)
	const head = `SELECT count(*) FROM readings`
	_, err := queryOf(t.Context(), e, head+strings.Repeat(" ", MaxStatementBytes+1-len(head)))
	if !errors.Is(err, ErrInvalidQuery) || !strings.Contains(err.Error(), "1048577 bytes, more than the 1048576 (1 MiB)") {
		t.Errorf("a statement one byte past the bound: %v", err)
	}
	if calls := s.Calls(); len(calls) != 0 {
		t.Errorf("a statement past the bound read %v", calls)
	}
	if n := count(t, e, head+strings.Repeat(" ", MaxStatementBytes-len(head))); n != 576 {
		t.Errorf("a statement of the bound: %d rows, want 576", n)
	}
}

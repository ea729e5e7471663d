package hot

import (
	"context"
	"testing"
)

// oldOwnersSQL turns the ownership relation of meterstore.lastgang back
// into the shape versions before seriesOwnersDDL created in the
// dictionary layouts: a row per series, operator and span under a GiST
// exclusion constraint, with the spans it recorded. The check function
// gets a body of its own, as an older version wrote another.
const oldOwnersSQL = `
CREATE TABLE meterstore.lastgang_operators_old AS
	SELECT o.series, u.operator, r.span FROM meterstore.lastgang_operators o, unnest(o.operators, o.spans) AS u(operator, m), unnest(u.m) AS r(span);
DROP TABLE meterstore.lastgang_operators;
ALTER TABLE meterstore.lastgang_operators_old RENAME TO lastgang_operators;
ALTER TABLE meterstore.lastgang_operators ALTER series SET NOT NULL, ALTER operator SET NOT NULL, ALTER span SET NOT NULL,
	ADD CONSTRAINT lastgang_operators_one EXCLUDE USING gist (series WITH =, span WITH &&, operator WITH <>);
CREATE OR REPLACE FUNCTION meterstore.lastgang_rows_check() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
`

// TestSeriesOwnersUpgrade: a table of a dictionary layout whose ownership
// relation has the older shape (a row per span under a GiST exclusion
// constraint) gets a row per series when declared again, with every span
// it had; the operators it recorded keep their readings, a second
// operator is refused, and writes go on.
func TestSeriesOwnersUpgrade(t *testing.T) {
	for _, v := range statementLayouts {
		if v.rows {
			continue // the rows layout keeps its exclusion constraint
		}
		t.Run(v.name, func(t *testing.T) { testSeriesOwnersUpgrade(t, v) })
	}
}

func testSeriesOwnersUpgrade(t *testing.T, v variant) {
	h, pool := newTier(t, Options{})
	tab := lastgang("lastgang")
	declareVariant(t, h, tab, v)
	ctx := context.Background()
	mustWrite(t, h, tab, meterDay(1, 100))
	c := sqlClient{pool: pool, rel: "meterstore.lastgang"}
	a, b := "9900000000003", "9900000000010"
	if err := c.copyCells(ctx, malo(3), cell{0, 1, a}, cell{2, 1, a}); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(ctx, oldOwnersSQL); err != nil {
		t.Fatal(err)
	}
	var spans int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM meterstore.lastgang_operators`).Scan(&spans); err != nil || spans != 3 {
		t.Fatalf("%d spans in the older shape, want 3 (%v)", spans, err)
	}

	h2 := newTierOn(t, pool)
	if err := h2.Ensure(ctx, lastgang("lastgang")); err != nil {
		t.Fatal(err)
	}
	var rows, ranges, excl int
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM meterstore.lastgang_operators),
	(SELECT count(*) FROM meterstore.lastgang_operators o, unnest(o.spans) m, unnest(m) r),
	(SELECT count(*) FROM pg_constraint WHERE contype = 'x' AND conrelid = 'meterstore.lastgang_operators'::regclass)`).Scan(&rows, &ranges, &excl); err != nil {
		t.Fatal(err)
	}
	if rows != 2 || ranges != 3 || excl != 0 {
		t.Fatalf("after the upgrade: %d series rows, %d spans, %d exclusion constraints; want 2, 3, 0", rows, ranges, excl)
	}
	if err := c.insert(ctx, pool, malo(1), "kWh", 4, 101, b, 1); !refusedAs(err, "23P01") {
		t.Fatalf("a second operator for a reading recorded before the upgrade: %v", err)
	}
	if err := c.copyCells(ctx, malo(3), cell{1, 1, b}); err != nil {
		t.Fatalf("another operator between the readings recorded before the upgrade: %v", err)
	}
	if err := c.copyCells(ctx, malo(3), cell{2, 2, b}); !refusedAs(err, "23P01") {
		t.Fatalf("a second operator for a gappy reading recorded before the upgrade: %v", err)
	}
	mustWrite(t, h2, tab, meterDay(4, 100))
	if err := h2.Ensure(ctx, lastgang("lastgang")); err != nil { // upgraded already: nothing to do
		t.Fatal(err)
	}
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM meterstore.lastgang_operators`).Scan(&rows); err != nil || rows != 3 {
		t.Fatalf("%d series rows after another meter's day, want 3 (%v)", rows, err)
	}
}

package store

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// TestQueryTwoTables writes power and gas of the same market locations,
// archives each to a watermark of its own, and reads both in one
// statement: the answer is what each table gives alone, and the header
// reports each table's watermark and tiers.
func TestQueryTwoTables(t *testing.T) {
	ctx := t.Context()
	s := newEnv(t).open(t, Options{Tables: []Table{power(), gasDaily()}})
	if err := s.CreatePartitions(ctx, dayN(0), dayN(10)); err != nil {
		t.Fatal(err)
	}
	var pRows, gRows []Reading
	for i := range 3 {
		for d := range 5 {
			for slot := range 4 {
				pRows = append(pRows, qh(i, d, slot, "A", 1, int64(1000*(i+1)+d)))
			}
			g := gasDay(i, d, 1, int64(30000*(i+1)+d))
			g.MaLo = malo(i)
			gRows = append(gRows, g)
		}
	}
	if _, err := s.Write(ctx, "power", pRows); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(ctx, "gas", gRows); err != nil {
		t.Fatal(err)
	}
	for name, now := range map[string]int{"power": 5, "gas": 4} {
		if out, err := s.Archive(ctx, name, dayN(now)); err != nil || !out.Healthy() {
			t.Fatalf("archive %s: %+v %v", name, out, err)
		}
	}
	wP, okP, err := s.Watermark(ctx, "power")
	if err != nil {
		t.Fatal(err)
	}
	wG, okG, err := s.Watermark(ctx, "gas")
	if err != nil {
		t.Fatal(err)
	}
	if !okP || !okG || wP.Equal(wG) || !wP.After(dayN(0)) || !wG.After(dayN(0)) || !wP.Before(dayN(4)) || !wG.Before(dayN(4)) {
		t.Fatalf("watermarks power %v %v, gas %v %v: want two different ones within the days written", wP, okP, wG, okG)
	}

	alone := map[string][2]string{}
	for i, name := range []string{"power", "gas"} {
		res, err := s.Query(ctx, name, `SELECT malo_id, count(*), sum(value) FROM readings GROUP BY malo_id`)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res.Rows {
			a := alone[r[0].(string)]
			a[i] = fmt.Sprint(r[1], " ", r[2])
			alone[r[0].(string)] = a
		}
		if !slices.Equal(res.Tiers, []string{"cold", "hot"}) {
			t.Fatalf("%s alone read %v, want both tiers", name, res.Tiers)
		}
	}
	const sql = `SELECT malo_id, p.n, p.total, g.n, g.total
		FROM (SELECT malo_id, count(*) AS n, sum(value) AS total FROM readings GROUP BY malo_id) p
		JOIN (SELECT malo_id, count(*) AS n, sum(value) AS total FROM gas.readings GROUP BY malo_id) g USING (malo_id)
		ORDER BY malo_id`
	res, err := s.Query(ctx, "power", sql)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 3 {
		t.Fatalf("%d rows: %v", len(res.Rows), res.Rows)
	}
	for _, r := range res.Rows {
		got := [2]string{fmt.Sprint(r[1], " ", r[2]), fmt.Sprint(r[3], " ", r[4])}
		if want := alone[r[0].(string)]; got != want || r[1].(int64) != 20 || r[3].(int64) != 5 {
			t.Errorf("%v: together %q, alone %q", r[0], got, want)
		}
	}
	want := []struct {
		name string
		w    any
	}{{"power", wP}, {"gas", wG}}
	if len(res.Tables) != 2 {
		t.Fatalf("tables read: %+v", res.Tables)
	}
	for i, tr := range res.Tables {
		if tr.Name != want[i].name || !tr.HasWatermark || fmt.Sprint(tr.Watermark) != fmt.Sprint(want[i].w) ||
			!slices.Equal(tr.Tiers, []string{"cold", "hot"}) || tr.Snapshot == 0 {
			t.Errorf("table %d read %+v, want %s at %v from both tiers", i, tr, want[i].name, want[i].w)
		}
	}
	if !res.Watermark.Equal(wP) {
		t.Errorf("header watermark %v, power's is %v", res.Watermark, wP)
	}

	if _, err := s.Query(ctx, "power", `SELECT count(*) FROM nosuch.readings`); !errors.Is(err, ErrInvalidQuery) || IsRetryable(err) {
		t.Errorf("an undeclared table: %v, want ErrInvalidQuery", err)
	}
}

// TestCompletenessJoinAcrossTables reads the completeness of power and of
// gas in one statement, with no default table, one of them archived to a
// watermark: per market location and balancing day the join holds what
// each table's completeness says alone, on both sides of W. A caller who
// may not read gas is refused before anything is read.
func TestCompletenessJoinAcrossTables(t *testing.T) {
	ctx := t.Context()
	s := newEnv(t).open(t, Options{Tables: []Table{power(), gasDaily()}})
	if err := s.CreatePartitions(ctx, dayN(0), dayN(10)); err != nil {
		t.Fatal(err)
	}
	var pRows, gRows []Reading
	for i := range 3 {
		for d := range 5 {
			for slot := range 4 + i + d {
				pRows = append(pRows, qh(i, d, slot, "A", 1, int64(1000*(i+1)+d)))
			}
			if (i+d)%3 != 0 {
				g := gasDay(i, d, 1, int64(30000*(i+1)+d))
				g.MaLo = malo(i)
				gRows = append(gRows, g)
			}
		}
	}
	if _, err := s.Write(ctx, "power", pRows); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Write(ctx, "gas", gRows); err != nil {
		t.Fatal(err)
	}
	if out, err := s.Archive(ctx, "power", dayN(4)); err != nil || !out.Healthy() {
		t.Fatalf("archive power: %+v %v", out, err)
	}
	// Each table's completeness alone, by market location and day.
	alone := map[string]map[string]string{}
	for _, name := range []string{"power", "gas"} {
		res, err := s.Query(ctx, name, `SELECT malo_id, balancing_day, present, missing FROM completeness`)
		if err != nil {
			t.Fatal(err)
		}
		alone[name] = map[string]string{}
		for _, r := range res.Rows {
			alone[name][fmt.Sprint(r[0], " ", r[1])] = fmt.Sprint(r[2], " ", r[3])
		}
		if len(alone[name]) == 0 {
			t.Fatalf("%s: no completeness", name)
		}
	}
	const sql = `SELECT p.malo_id, p.balancing_day, p.present, p.missing, g.present, g.missing
		FROM power.completeness p JOIN gas.completeness g USING (malo_id, balancing_day) ORDER BY ALL`
	res, err := s.Query(ctx, "", sql)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for k, p := range alone["power"] {
		if g, ok := alone["gas"][k]; ok {
			want = append(want, k+" "+p+" "+g)
		}
	}
	slices.Sort(want)
	var got []string
	for _, r := range res.Rows {
		got = append(got, fmt.Sprint(r[0], " ", r[1], " ", r[2], " ", r[3], " ", r[4], " ", r[5]))
	}
	slices.Sort(got)
	if len(want) < 10 || !slices.Equal(got, want) {
		t.Errorf("power.completeness JOIN gas.completeness:\n got %v\nwant %v", got, want)
	}
	if len(res.Tables) != 2 || res.Tables[0].Name != "gas" || res.Tables[1].Name != "power" ||
		!slices.Equal(res.Tables[1].Tiers, []string{"cold", "hot"}) {
		t.Errorf("tables read %+v, want gas and power, power from both tiers", res.Tables)
	}
	// The same with power the default: its completeness unqualified.
	def, err := s.Query(ctx, "power", strings.ReplaceAll(sql, "power.completeness", "completeness"))
	if err != nil || fmt.Sprint(def.Rows) != fmt.Sprint(res.Rows) {
		t.Errorf("with power the default: %v, %v", def.Rows, err)
	}
	_, err = s.Prepare(ctx, sql, StatementOptions{May: func(name string) bool { return name == "power" }})
	var forbidden *ForbiddenError
	if !errors.As(err, &forbidden) || !slices.Equal(forbidden.Tables, []string{"gas"}) {
		t.Errorf("a caller who may not read gas: %v", err)
	}
}

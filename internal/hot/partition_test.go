package hot

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meterstore/meterstore/series"
)

func TestCreatePartitions(t *testing.T) {
	h, pool := newTier(t, Options{})
	ctx := context.Background()
	tab := lastgang("lastgang")
	if err := h.Ensure(ctx, tab); err != nil {
		t.Fatal(err)
	}
	now := day.Add(13 * time.Hour)
	tab.Headroom = 36 * time.Hour // reaches into the day after tomorrow
	created, err := h.EnsurePartitions(ctx, tab, now)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range created {
		names = append(names, p.Name)
	}
	if want := "lastgang_p20260302 lastgang_p20260303 lastgang_p20260304"; strings.Join(names, " ") != want {
		t.Fatalf("created %v, want %s", names, want)
	}
	if again, err := h.EnsurePartitions(ctx, tab, now); err != nil || len(again) != 0 {
		t.Fatalf("second EnsurePartitions created %v, %v", again, err)
	}
	parts, err := h.Partitions(ctx, tab)
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 3 || !parts[2].Attached || !parts[2].From.Equal(day.AddDate(0, 0, 2)) || !parts[2].To.Equal(day.AddDate(0, 0, 3)) {
		t.Fatalf("partitions %+v", parts)
	}
	// The bound matches the name, the helper CHECK is gone, and the
	// integrity constraints and the statement triggers are on the
	// partition.
	var bound string
	var constraints, triggers []string
	err = pool.QueryRow(ctx, `SELECT pg_get_expr(c.relpartbound, c.oid),
	array(SELECT conname::text FROM pg_constraint WHERE conrelid = c.oid AND contype IN ('p', 'x') ORDER BY conname),
	array(SELECT tgname::text FROM pg_trigger WHERE tgrelid = c.oid ORDER BY tgname)
FROM pg_class c WHERE c.oid = 'meterstore.lastgang_p20260303'::regclass`).Scan(&bound, &constraints, &triggers)
	if err != nil {
		t.Fatal(err)
	}
	// A new table of integrity statement is in the step layout: its
	// bounds are quarter hours since 1970.
	if bound != `FOR VALUES FROM (1969440) TO (1969536)` ||
		!slices.Equal(constraints, []string{"lastgang_p20260303_pkey"}) ||
		!slices.Equal(triggers, []string{"lastgang_p20260303_immutable", "lastgang_p20260303_rows"}) {
		t.Fatalf("bound %q, constraints %v, triggers %v", bound, constraints, triggers)
	}
	var helper int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_constraint WHERE conname LIKE '%\_bound'`).Scan(&helper); err != nil || helper != 0 {
		t.Fatalf("%d bound CHECKs left, %v", helper, err)
	}
}

func TestMonthlyPartitions(t *testing.T) {
	h, _ := newTier(t, Options{})
	ctx := context.Background()
	tab := lastgang("monthly")
	tab.Width = series.Monthly
	if err := h.Ensure(ctx, tab); err != nil {
		t.Fatal(err)
	}
	created, err := h.CreatePartitions(ctx, tab, time.Date(2026, 1, 31, 23, 0, 0, 0, time.UTC), time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range created {
		got = append(got, fmt.Sprintf("%s %s..%s", p.Name, p.From.Format("01-02"), p.To.Format("01-02")))
	}
	if want := "monthly_p20260101 01-01..02-01, monthly_p20260201 02-01..03-01, monthly_p20260301 03-01..04-01"; strings.Join(got, ", ") != want {
		t.Fatalf("created %s", strings.Join(got, ", "))
	}
	mustWrite(t, h, tab, meterDay(1, 1))
	if err := h.Detach(ctx, tab, day); !errors.As(err, new(*series.Error)) {
		t.Fatalf("detach at a non-boundary: %v", err)
	}
}

func TestDetachDrop(t *testing.T) {
	h, pool := newTier(t, Options{})
	ctx := context.Background()
	tab := lastgang("lastgang")
	declare(t, h, tab)
	mustWrite(t, h, tab, meterDay(1, 1))

	wantError(t, h.Drop(ctx, tab, day), series.InvalidInput) // attached
	for range 2 {                                            // idempotent
		if err := h.Detach(ctx, tab, day); err != nil {
			t.Fatal(err)
		}
	}
	parts, err := h.Partitions(ctx, tab)
	if err != nil || len(parts) != 2 || parts[0].Attached || !parts[1].Attached {
		t.Fatalf("after detach: %+v, %v", parts, err)
	}
	// The detached rows are kept, for the archiver, but out of reach.
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM meterstore.lastgang_p20260302`).Scan(&n); err != nil || n != 96 {
		t.Fatalf("detached partition holds %d rows, %v", n, err)
	}
	if got := scanAll(t, h, tab); len(got) != 0 {
		t.Fatalf("scan sees %d rows of a detached partition", len(got))
	}
	_, err = h.Write(ctx, tab, meterDay(2, 1))
	if e := wantError(t, err, series.InvalidInput); len(e.Rows) != 96 || !strings.Contains(e.Problems[0].Reason, "lastgang_p20260302 is not attached") {
		t.Fatalf("write into a detached window: %v", err)
	}
	_, err = h.CreatePartitions(ctx, tab, day, day)
	wantError(t, err, series.InvalidInput)

	for range 2 {
		if err := h.Drop(ctx, tab, day); err != nil {
			t.Fatal(err)
		}
	}
	if parts, err := h.Partitions(ctx, tab); err != nil || len(parts) != 1 {
		t.Fatalf("after drop: %+v, %v", parts, err)
	}
	wantError(t, h.Detach(ctx, tab, day), series.InvalidInput) // gone
}

// TestLongestName declares a table whose name has the longest length
// allowed and checks that no derived name was truncated. With several
// resolutions, its partitions carry both exclusion constraints.
func TestLongestName(t *testing.T) {
	h, pool := newTier(t, Options{})
	name := strings.Repeat("n", series.MaxNameLen)
	tab := multiResolution()
	tab.Name = name
	declare(t, h, tab)
	mustWrite(t, h, tab, meterDay(1, 1))
	var names []string
	err := pool.QueryRow(ctx(), `SELECT array(SELECT conname::text FROM pg_constraint WHERE conrelid = $1::regclass ORDER BY conname)`,
		h.ident(partitionName(tab, day))).Scan(&names)
	if err != nil {
		t.Fatal(err)
	}
	p := partitionName(tab, day)
	for _, want := range []string{p + "_operator", p + "_overlap", p + "_pkey"} {
		if !slices.Contains(names, want) {
			t.Fatalf("constraint %s (%d bytes) missing: %v", want, len(want), names)
		}
	}
	tab.Name += "n"
	wantError(t, h.Ensure(ctx(), tab), series.InvalidConfig)
}

func ctx() context.Context { return context.Background() }

// TestObisKey: the bigint the exclusion constraints compare OBIS codes by
// is one to one on every code the obis_code CHECK admits, groups up to 999
// included, and is what its definition says.
func TestObisKey(t *testing.T) {
	_, pool := newTier(t, Options{})
	rng := rand.New(rand.NewPCG(3, 4))
	codes := []string{"0-0:0.0.0", "0-0:0.0.0*0", "1-1:1.29.0", "1-1:1.29.0*255", "7-20:3.0.0", "999-999:999.999.999*999",
		"1-1:12.9.0", "1-1:1.29.0*1", "1-11:2.9.0", "11-1:2.9.0"}
	for range 3000 {
		g := make([]any, 6)
		for i := range g {
			g[i] = []int{rng.IntN(10), rng.IntN(256), rng.IntN(1000)}[rng.IntN(3)]
		}
		c := fmt.Sprintf("%d-%d:%d.%d.%d", g[:5]...)
		if rng.IntN(2) == 0 {
			c += fmt.Sprintf("*%d", g[5])
		}
		codes = append(codes, c)
	}
	rows, err := pool.Query(context.Background(), `SELECT o, `+obisKey("o")+` FROM unnest($1::text[]) AS o`, codes)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int64]string{}
	for rows.Next() {
		var code string
		var key int64
		if err := rows.Scan(&code, &key); err != nil {
			t.Fatal(err)
		}
		var want int64
		var g [6]int64
		n, _ := fmt.Sscanf(strings.NewReplacer("-", " ", ":", " ", ".", " ", "*", " ").Replace(code), "%d %d %d %d %d %d", &g[0], &g[1], &g[2], &g[3], &g[4], &g[5])
		for i := range 5 {
			want |= g[i] << (50 - 10*i)
		}
		if n == 6 {
			want |= 1<<60 | g[5]
		}
		if key != want {
			t.Fatalf("%s: key %x, want %x", code, key, want)
		}
		if other, ok := seen[key]; ok && other != code {
			t.Fatalf("%s and %s share key %x", code, other, key)
		}
		seen[key] = code
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
}

func TestPartitionNames(t *testing.T) {
	tab := lastgang("t")
	if s, ok := partitionStart(tab, partitionName(tab, day)); !ok || !s.Equal(day) {
		t.Errorf("partitionStart(partitionName(%v)) = %v, %v", day, s, ok)
	}
	for _, bad := range []string{"t_p2026030", "t_p20260230", "u_p20260302", "t_p2026030x", "t_p20260302_x"} {
		if _, ok := partitionStart(tab, bad); ok {
			t.Errorf("partitionStart(%q) accepted", bad)
		}
	}
	tab.Width = series.Monthly
	if _, ok := partitionStart(tab, "t_p20260302"); ok {
		t.Error("a monthly partition starting mid-month accepted")
	}
}

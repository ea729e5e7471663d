package privacy

import (
	"context"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/meterstore/meterstore/series"
)

var refPattern = regexp.MustCompile(`^s_[a-z2-7]{26}$`)

func TestOpen(t *testing.T) {
	ctx := context.Background()
	pool := newPool(t, nil)
	const schema = `Privacy "Registry"` // quoting, not luck, keeps this one name
	for range 2 {
		if _, err := Open(ctx, pool, Options{Schema: schema}); err != nil {
			t.Fatal(err)
		}
	}
	rows, _ := pool.Query(ctx, `SELECT indexname FROM pg_indexes WHERE schemaname = $1 ORDER BY 1`, schema)
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"retention_log_pkey", collectIndex, yearIndex, naturalKey, "subjects_pkey",
		"erasure_log_pkey", "suppressed_subjects_pkey", "subject_key_pkey"}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("indexes %v, want %v", got, want)
	}
	for _, bad := range []string{strings.Repeat("x", 64), "a\nb", "\xff"} {
		_, err := Open(ctx, pool, Options{Schema: bad})
		wantKind(t, err, series.InvalidConfig)
	}
}

func TestOpenConcurrent(t *testing.T) {
	pool := newPool(t, nil)
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range errs {
		wg.Go(func() { _, errs[i] = Open(context.Background(), pool, Options{}) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}

func TestRegister(t *testing.T) {
	ctx := context.Background()
	reg, _ := newRegistry(t)
	loc := berlin(t)
	at := time.Date(2025, 3, 4, 10, 0, 0, 0, loc)

	a := mustRegister(t, reg, "K-100", at)
	if !refPattern.MatchString(a) || strings.Contains(a, "100") {
		t.Errorf("reference %q: want s_ and 26 base32 characters", a)
	}
	if again := mustRegister(t, reg, "K-100", at.AddDate(0, 5, 0)); again != a {
		t.Errorf("same subject and year: %q, then %q", a, again)
	}
	b := mustRegister(t, reg, "K-100", at.AddDate(1, 0, 0))
	c := mustRegister(t, reg, "K-200", at)
	if b == a || c == a || c == b {
		t.Errorf("references not distinct: %q %q %q", a, b, c)
	}

	id, year, ok, err := reg.Resolve(ctx, b)
	if err != nil || !ok || id != "K-100" || year != 2026 {
		t.Errorf("Resolve(%q) = %q, %d, %v, %v", b, id, year, ok, err)
	}
	for _, unknown := range []string{"", "s_unknown"} {
		if id, _, ok, err := reg.Resolve(ctx, unknown); err != nil || ok || id != "" {
			t.Errorf("Resolve(%q) = %q, %v, %v", unknown, id, ok, err)
		}
	}
	refs, err := reg.References(ctx, "K-100")
	if err != nil || !slices.Equal(refs, []string{a, b}) {
		t.Errorf("References = %v, %v, want [%s %s]", refs, err, a, b)
	}
	if refs, err := reg.References(ctx, "K-999"); err != nil || len(refs) != 0 {
		t.Errorf("References of an unknown subject = %v, %v", refs, err)
	}
}

// The collection year is the Berlin year, not the UTC one.
func TestRegisterBerlinYear(t *testing.T) {
	ctx := context.Background()
	reg, _ := newRegistry(t)
	for _, c := range []struct {
		utc  string
		year int
	}{
		{"2024-12-31T22:59:59.999999Z", 2024},
		{"2024-12-31T23:00:00Z", 2025}, // 00:00 on 1 January in Berlin
		{"2024-12-31T23:30:00Z", 2025},
		{"2025-06-30T22:30:00Z", 2025},
	} {
		at, err := time.Parse(time.RFC3339Nano, c.utc)
		if err != nil {
			t.Fatal(err)
		}
		ref := mustRegister(t, reg, "K-"+c.utc, at)
		if _, year, _, err := reg.Resolve(ctx, ref); err != nil || year != c.year {
			t.Errorf("%s: collection year %d, %v, want %d", c.utc, year, err, c.year)
		}
	}
}

// The registry keeps the earliest instant of a subject-year.
func TestRegisterKeepsEarliest(t *testing.T) {
	ctx := context.Background()
	reg, pool := newRegistry(t)
	t2 := time.Date(2025, 5, 1, 0, 0, 0, 0, time.UTC)
	t1 := t2.Add(-48*time.Hour + 1500) // sub-microsecond part is dropped
	t3 := t2.Add(24 * time.Hour)
	ref := mustRegister(t, reg, "K-1", t2)
	for _, at := range []time.Time{t1, t3} {
		if got := mustRegister(t, reg, "K-1", at); got != ref {
			t.Fatalf("reference changed to %q", got)
		}
	}
	var first time.Time
	if err := pool.QueryRow(ctx, `SELECT collected_at FROM `+reg.subjects+` WHERE reference = $1`, ref).Scan(&first); err != nil {
		t.Fatal(err)
	}
	if want := t1.Truncate(time.Microsecond); !first.Equal(want) {
		t.Errorf("collected_at %v, want %v", first, want)
	}
}

func TestRegisterConcurrent(t *testing.T) {
	reg, pool := newRegistry(t)
	at := time.Date(2026, 1, 15, 0, 0, 0, 0, time.UTC)
	refs := make([]string, 8)
	errs := make([]error, len(refs))
	var wg sync.WaitGroup
	for i := range refs {
		wg.Go(func() {
			refs[i], errs[i] = reg.Register(context.Background(), "K-1", at.Add(time.Duration(i)*time.Hour))
		})
	}
	wg.Wait()
	for i := range refs {
		if errs[i] != nil || refs[i] != refs[0] {
			t.Errorf("registration %d: %q, %v; first got %q", i, refs[i], errs[i], refs[0])
		}
	}
	if n := count(t, pool, reg.subjects); n != 1 {
		t.Errorf("%d rows, want 1", n)
	}
}

func TestRegisterRefuses(t *testing.T) {
	ctx := context.Background()
	reg, pool := newRegistry(t)
	at := time.Date(2026, 1, 15, 0, 0, 0, 0, time.UTC)
	for _, id := range []string{"", " K-1", "K-1\t", "K\x001", "K\n1", "K-\xff", strings.Repeat("k", MaxNaturalIDLen+1)} {
		_, err := reg.Register(ctx, id, at)
		wantKind(t, err, series.InvalidInput)
		if strings.Contains(err.Error(), id) && id != "" {
			t.Errorf("error %q repeats the natural id", err)
		}
		_, err = reg.References(ctx, id)
		wantKind(t, err, series.InvalidInput)
		_, err = reg.Erase(ctx, id, basis, actor)
		wantKind(t, err, series.InvalidInput)
		_, err = reg.Unsuppress(ctx, id, basis, actor)
		wantKind(t, err, series.InvalidInput)
	}
	_, err := reg.Register(ctx, "K-1", time.Time{})
	wantKind(t, err, series.InvalidInput)
	if n := count(t, pool, reg.subjects); n != 0 {
		t.Errorf("%d rows written by refused registrations", n)
	}
}

// Erasure removes the links and leaves the readings.
func TestErase(t *testing.T) {
	ctx := context.Background()
	reg, pool := newRegistry(t)
	if _, err := pool.Exec(ctx, `CREATE TABLE meterstore.readings (malo_id text, subject_id text)`); err != nil {
		t.Fatal(err)
	}
	at := time.Date(2024, 7, 1, 0, 0, 0, 0, time.UTC)
	var erased []string
	for y := range 3 {
		erased = append(erased, mustRegister(t, reg, "K-1", at.AddDate(y, 0, 0)))
	}
	kept := mustRegister(t, reg, "K-2", at)
	for _, ref := range append(slices.Clone(erased), kept) {
		if _, err := pool.Exec(ctx, `INSERT INTO meterstore.readings VALUES ('51238696781', $1)`, ref); err != nil {
			t.Fatal(err)
		}
	}

	n, err := reg.Erase(ctx, "K-1", basis, actor)
	if err != nil || n != 3 {
		t.Fatalf("Erase = %d, %v, want 3", n, err)
	}
	for _, ref := range erased {
		if _, _, ok, err := reg.Resolve(ctx, ref); ok || err != nil {
			t.Errorf("erased %q still resolves (%v)", ref, err)
		}
	}
	if refs, err := reg.References(ctx, "K-1"); err != nil || len(refs) != 0 {
		t.Errorf("References after erasure = %v, %v", refs, err)
	}
	if id, _, ok, _ := reg.Resolve(ctx, kept); !ok || id != "K-2" {
		t.Errorf("another subject was erased")
	}
	if n := count(t, pool, "meterstore.readings"); n != 4 {
		t.Errorf("%d readings after erasure, want all 4", n)
	}
	var linked int64
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM meterstore.readings r
		JOIN `+reg.subjects+` s ON s.reference = r.subject_id`).Scan(&linked); err != nil || linked != 1 {
		t.Errorf("%d readings still linked (%v), want 1", linked, err)
	}

	if n, err := reg.Erase(ctx, "K-1", basis, actor); err != nil || n != 0 {
		t.Errorf("second Erase = %d, %v", n, err)
	}
	if lifted, err := reg.Unsuppress(ctx, "K-1", basis, actor); err != nil || !lifted {
		t.Fatalf("Unsuppress = %v, %v", lifted, err)
	}
	if ref := mustRegister(t, reg, "K-1", at); slices.Contains(erased, ref) {
		t.Errorf("registration after erasure reissued %q", ref)
	}
}

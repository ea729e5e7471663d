package cold

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/meterstore/meterstore/series"
)

func TestAppendLate(t *testing.T) {
	e := newEnv(t, Options{})
	tab := loadProfile("power")
	h := e.ensure(t, tab)

	var he *series.Error
	if _, err := e.tier.AppendLate(t.Context(), h, quarterHours(0, jan2026, 1)); !errors.As(err, &he) || he.Kind != series.InvalidInput {
		t.Fatalf("late rows before anything was archived: %v", err)
	}

	archived := quarterHours(0, jan2026, 96)
	e.archive(t, h, jan2026, feb2026, archived)

	// A correction under a new version, a new location, and a redelivery.
	fix := archived[10]
	fix.Version++
	fix.Value += 250_000
	late := []series.Reading{fix, quarterHour(3, jan2026, 5), archived[20], quarterHour(3, jan2026, 5)}
	res, err := e.tier.AppendLate(t.Context(), h, late)
	if err != nil {
		t.Fatal(err)
	}
	want := []series.Status{series.Superseded, series.Inserted, series.Present, series.Present}
	if !slices.Equal(res.Status, want) || res.Superseded != 1 || res.Inserted != 1 || res.Present != 2 || res.Commit.Rows != 2 {
		t.Fatalf("result %+v, want statuses %v", res, want)
	}
	sum := e.summary(t, h)
	if sum[SummaryWatermark] != FormatTime(feb2026) || sum[SummaryLateRows] != "2" || sum[SummaryArchivedFrom] != "" {
		t.Fatalf("late snapshot summary %v: want the unchanged watermark re-stamped", sum)
	}
	sameReadings(t, tab, collect(t, e.tier.Scan(t.Context(), h, series.Range{})), append(slices.Clone(archived), late[:2]...))

	// Redelivering the whole batch commits nothing.
	before := e.summary(t, h)[SummaryCommitID]
	res, err = e.tier.AppendLate(t.Context(), h, late)
	if err != nil || res.Inserted != 0 || res.Present != 4 || e.summary(t, h)[SummaryCommitID] != before {
		t.Fatalf("redelivery: %+v, %v", res, err)
	}

	for _, tc := range []struct {
		name string
		rows []series.Reading
		kind series.Kind
		row  int
		says string
	}{
		{"restated value", restate(archived[30], func(r *series.Reading) { r.Value++ }), series.IntegrityViolation, 1, "value"},
		{"restated quality", restate(archived[31], func(r *series.Reading) { r.Quality = 2 }), series.IntegrityViolation, 1, "quality"},
		{"restated within the batch", append(quarterHours(4, jan2026, 1), restate(quarterHour(4, jan2026, 0), func(r *series.Reading) { r.Value = 7 })...), series.IntegrityViolation, 1, "row 0"},
		{"at the watermark", []series.Reading{quarterHour(0, jan2026, 0), quarterHour(5, feb2026, 0)}, series.InvalidInput, 1, "hot tier"},
		{"bad check digit", restate(quarterHour(6, jan2026, 0), func(r *series.Reading) { r.MaLo = "51000001000" }), series.InvalidInput, 1, "malo_id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := tc.rows
			if len(rows) == 1 {
				rows = append([]series.Reading{quarterHour(7, jan2026, 0)}, rows...)
			}
			_, err := e.tier.AppendLate(t.Context(), h, rows)
			var he *series.Error
			if !errors.As(err, &he) || he.Kind != tc.kind || !slices.Equal(he.Rows, []int{tc.row}) || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("error %v, want %v naming row %d and %q", err, tc.kind, tc.row, tc.says)
			}
		})
	}
	// Nothing of the refused batches landed.
	if n := len(collect(t, e.tier.Scan(t.Context(), h, series.Range{MaLo: []string{malo(7)}}))); n != 0 {
		t.Fatalf("a refused batch stored %d readings", n)
	}
}

// TestAppendLateOutcomes: a late correction is decided by version as a
// hot write is, against the stored versions and the earlier rows of its
// batch, whatever the order of arrival.
func TestAppendLateOutcomes(t *testing.T) {
	e := newEnv(t, Options{})
	tab := loadProfile("power")
	h := e.ensure(t, tab)
	archived := quarterHours(0, jan2026, 8)
	e.archive(t, h, jan2026, feb2026, archived)
	// version returns r under a version d above its own, with another value.
	version := func(r series.Reading, d uint64) series.Reading {
		r.Version, r.Value = r.Version+d, r.Value+series.Decimal(d)
		return r
	}
	for _, c := range []struct {
		name string
		rows []series.Reading
		want []series.Status
	}{
		{"higher, then lower than it", []series.Reading{version(archived[1], 2), version(archived[1], 1)},
			[]series.Status{series.Superseded, series.Shadowed}},
		{"lower, then higher", []series.Reading{version(archived[2], 1), version(archived[2], 2)},
			[]series.Status{series.Superseded, series.Superseded}},
		{"a stored version again, a higher one, a redelivery and a new reading", []series.Reading{version(archived[1], 1),
			version(archived[1], 3), archived[3], quarterHour(9, jan2026, 0)},
			[]series.Status{series.Present, series.Superseded, series.Present, series.Inserted}},
	} {
		res, err := e.tier.AppendLate(t.Context(), h, c.rows)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !slices.Equal(res.Status, c.want) {
			t.Errorf("%s: %v, want %v", c.name, res.Status, c.want)
		}
		if n := res.Inserted + res.Present + res.Superseded + res.Shadowed; n != len(c.rows) {
			t.Errorf("%s: counts %+v", c.name, res)
		}
	}
	// A version below the highest stored arrives late: shadowed.
	res, err := e.tier.AppendLate(t.Context(), h, []series.Reading{version(archived[5], 5), version(archived[6], 5)})
	if err != nil || res.Superseded != 2 {
		t.Fatalf("%+v %v", res, err)
	}
	res, err = e.tier.AppendLate(t.Context(), h, []series.Reading{version(archived[5], 4)})
	if err != nil || fmt.Sprint(res.Status) != "[shadowed]" || res.Shadowed != 1 {
		t.Fatalf("an older version after a newer one: %+v %v", res, err)
	}
}

// restate returns r changed by fn, as the only reading of a batch.
func restate(r series.Reading, fn func(*series.Reading)) []series.Reading {
	fn(&r)
	return []series.Reading{r}
}

func TestAppendLateRacesAnArchival(t *testing.T) {
	// An archival commits between the late batch's check and its commit;
	// the pinned commit fails, and AppendLate checks again and lands.
	e := newEnv(t, Options{})
	tab := loadProfile("power")
	h := e.ensure(t, tab)
	e.archive(t, h, jan2026, feb2026, quarterHours(0, jan2026, 4))
	next := quarterHours(1, feb2026, 4)
	e.tier.beforeCommit = func(ctx context.Context, _ string) {
		e.tier.beforeCommit = nil
		if _, err := e.tier.Archive(ctx, h, mar2026, feb2026, mar2026, Readings(next)); err != nil {
			t.Error(err)
		}
	}
	late := quarterHours(2, jan2026.Add(time.Hour), 3)
	res, err := e.tier.AppendLate(t.Context(), h, late)
	if err != nil || res.Inserted != 3 {
		t.Fatalf("late batch: %+v, %v", res, err)
	}
	if w, _, _ := e.tier.Watermark(t.Context(), h); !w.Equal(mar2026) {
		t.Fatalf("watermark %v after the late batch, want %v", w, mar2026)
	}
	if u := e.unreferenced(t, h); len(u) > 0 {
		t.Fatalf("the lost attempt left %v", u)
	}
}

package hot

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/meterstore/meterstore/internal/pgtest"
	"github.com/meterstore/meterstore/series"
)

// TestReadSeriesGenericPlan: the series statement runs on its prepared
// generic plan from its first execution on, in every layout, where
// PostgreSQL would plan it anew for each of its first five and, over
// partitions, for every later one too; and the setting that asks for it
// ends with the read, the connection left as it was.
func TestReadSeriesGenericPlan(t *testing.T) {
	for _, l := range []layout{layoutRows, layoutDictionary, layoutLean, layoutStep} {
		t.Run(l.String(), func(t *testing.T) {
			ctx := t.Context()
			h, reads := oneConnTier(t, false)
			h.statementLayout = l
			tab := lastgang("generic")
			tab.Integrity = series.IntegrityStatement
			declare(t, h, tab)
			if _, err := h.CreatePartitions(ctx, tab, day.Add(-3*24*time.Hour), day.Add(3*24*time.Hour)); err != nil {
				t.Fatal(err)
			}
			mustWrite(t, h, tab, append(meterDay(1, 100), meterDay(2, 100)...))
			mustWrite(t, h, tab, meterDay(1, 101)[:10])
			const n = 8
			for range n {
				res, err := h.ReadSeries(ctx, tab, SeriesQuery{MaLo: malo(1), OBIS: "1-1:1.29.0", From: day, To: day.Add(24 * time.Hour)})
				if err != nil || len(res.Readings) != 96 {
					t.Fatalf("%d readings, %v; want 96", len(res.Readings), err)
				}
			}
			var generic, custom int64
			var mode string
			if err := reads.QueryRow(ctx, `SELECT coalesce(sum(generic_plans), 0)::int8, coalesce(sum(custom_plans), 0)::int8, current_setting('plan_cache_mode')
				FROM pg_prepared_statements WHERE statement LIKE 'SELECT NULL::text[] AS names, %'`).Scan(&generic, &custom, &mode); err != nil {
				t.Fatal(err)
			}
			if custom != 0 || generic != n {
				t.Errorf("the series statement ran on %d generic and %d custom plans; want %d generic", generic, custom, n)
			}
			if mode != "auto" {
				t.Errorf("plan_cache_mode after the reads: %q, want auto", mode)
			}
		})
	}
}

// TestReadSeriesStartsGeneric: on a read pool whose connections start on
// generic plans (GenericPlans), a series read is the series statement
// alone, on its generic plan from the first execution, without the
// statement that asks for it.
func TestReadSeriesStartsGeneric(t *testing.T) {
	ctx := t.Context()
	h, reads := oneConnTier(t, true)
	tab := lastgang("starts")
	declare(t, h, tab)
	if _, err := h.CreatePartitions(ctx, tab, day.Add(-3*24*time.Hour), day.Add(3*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, h, tab, append(meterDay(1, 100), meterDay(2, 100)...))
	const n = 8
	for range n {
		res, err := h.ReadSeries(ctx, tab, SeriesQuery{MaLo: malo(1), OBIS: "1-1:1.29.0", From: day, To: day.Add(24 * time.Hour)})
		if err != nil || len(res.Readings) != 96 {
			t.Fatalf("%d readings, %v; want 96", len(res.Readings), err)
		}
	}
	var generic, custom, settings int64
	if err := reads.QueryRow(ctx, `SELECT coalesce(sum(generic_plans) FILTER (WHERE statement LIKE 'SELECT NULL::text[] AS names, %'), 0)::int8,
		coalesce(sum(custom_plans) FILTER (WHERE statement LIKE 'SELECT NULL::text[] AS names, %'), 0)::int8,
		count(*) FILTER (WHERE statement LIKE '%plan_cache_mode%' AND statement NOT LIKE '%pg_prepared_statements%')
		FROM pg_prepared_statements`).Scan(&generic, &custom, &settings); err != nil {
		t.Fatal(err)
	}
	if custom != 0 || generic != n {
		t.Errorf("the series statement ran on %d generic and %d custom plans; want %d generic", generic, custom, n)
	}
	if settings != 0 {
		t.Errorf("%d statements setting plan_cache_mode were prepared; want none, the connections start with it", settings)
	}
}

// oneConnTier returns a tier over a fresh database whose pool, the reads'
// too, holds one connection, so that pg_prepared_statements counts the
// session's statements; generic starts its connections on generic plans.
func oneConnTier(t *testing.T, generic bool) (*Tier, *pgxpool.Pool) {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(pgtest.NewDB(t))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 1
	if generic {
		GenericPlans(cfg)
	}
	reads, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reads.Close)
	h, err := New(reads, Options{ReadPool: reads})
	if err != nil {
		t.Fatal(err)
	}
	return h, reads
}

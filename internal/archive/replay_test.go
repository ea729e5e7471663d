package archive

import (
	"context"
	"database/sql"
	"errors"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	icesql "github.com/apache/iceberg-go/catalog/sql"
	icetable "github.com/apache/iceberg-go/table"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/meterstore/meterstore/catalog"
	restcatalog "github.com/meterstore/meterstore/catalog/rest"
	"github.com/meterstore/meterstore/consensus/postgres"
	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/internal/pgtest"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// racingCatalog runs before, once, when a commit reaches it: between the
// moment its committer prepared the commit on the table it had read and
// the moment the catalog sees it, so another committer moves the table on.
type racingCatalog struct {
	icecatalog.Catalog
	once   sync.Once
	before func(ctx context.Context)
}

func (r *racingCatalog) CommitTable(ctx context.Context, ident icetable.Identifier, reqs []icetable.Requirement, updates []icetable.Update) (icetable.Metadata, string, error) {
	r.once.Do(func() { r.before(ctx) })
	return r.Catalog.CommitTable(ctx, ident, reqs, updates)
}

// TestWatermarkReplayRefused runs two committers against iceberg-go's SQL
// catalog on PostgreSQL and against a REST catalog that checks nothing of
// watermarks (MeterStore's catalog served over REST without a commit
// check, as a foreign REST catalog would be). Committer B reads W at day 1
// and prepares a commit moving it to day 2; before the catalog sees it,
// committer A moves W to day 3. iceberg-go answers B's lost race by
// replaying B's snapshot onto A's: through the cold tier's guard the replay
// is refused, on every retry, and W stays at day 3 with A's rows alone.
// The same race with
// the check switched off moves W back to day 2, which shows that the race
// is real and the refusal is the guard's.
func TestWatermarkReplayRefused(t *testing.T) {
	for _, kind := range []string{"sql", "rest"} {
		t.Run(kind, func(t *testing.T) {
			for _, guarded := range []bool{true, false} {
				name := "guarded"
				if !guarded {
					name = "check off"
				}
				t.Run(name, func(t *testing.T) { replayRace(t, kind, guarded) })
			}
		})
	}
}

// rawCatalog opens a catalog of kind with no commit check of its own.
func rawCatalog(t *testing.T, kind, url, dir string) icecatalog.Catalog {
	t.Helper()
	ctx := t.Context()
	switch kind {
	case "sql":
		db, err := sql.Open("pgx", url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		cat, err := icesql.NewCatalog("meterstore", db, icesql.Postgres, iceberg.Properties{"warehouse": "file://" + dir})
		if err != nil {
			t.Fatal(err)
		}
		return cat
	case "rest":
		wh, err := catalog.OpenWarehouse(ctx, "file://"+dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { wh.Bucket.Close() })
		pcfg, err := pgxpool.ParseConfig(url)
		if err != nil {
			t.Fatal(err)
		}
		l, err := postgres.Open(ctx, pcfg, postgres.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(l.Close)
		served, err := catalog.New(catalog.Options{Warehouse: wh, Log: l})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(restcatalog.WritableHandler(served, nil))
		t.Cleanup(srv.Close)
		cat, err := rest.NewCatalog(ctx, "rest", srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cat.Close() })
		return cat
	}
	t.Fatalf("catalog kind %q", kind)
	return nil
}

// dayRows returns the quarter hours of meter 0 on days [from, to), with
// what the hot tier derives at a write filled in.
func dayRows(t *testing.T, from, to int) []series.Reading {
	t.Helper()
	cal, err := metering.NewCalendar()
	if err != nil {
		t.Fatal(err)
	}
	var out []series.Reading
	for d := from; d < to; d++ {
		for s := range 96 {
			r := qh(0, d, s, 1, int64(d*1000+s))
			r.RecordedAt = dayN(d + 1)
			r.BalancingDay = cal.BalancingDay(r.From, metering.Electricity)
			out = append(out, r)
		}
	}
	return out
}

func replayRace(t *testing.T, kind string, guarded bool) {
	ctx := t.Context()
	raw := rawCatalog(t, kind, pgtest.NewDB(t), t.TempDir())
	tab := lastgang()

	a, err := cold.New(raw, cold.Options{})
	if err != nil {
		t.Fatal(err)
	}
	racer := &racingCatalog{Catalog: raw}
	bcat := icecatalog.Catalog(racer) // cold.New guards it
	if !guarded {
		// A guard whose check passes everything: cold.New leaves it be,
		// and B commits as if the catalog checked nothing.
		bcat = catalog.Guard(racer, func(icetable.Identifier, icetable.Metadata, icetable.Metadata) error { return nil })
	}
	b, err := cold.New(bcat, cold.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cta, err := a.Ensure(ctx, tab)
	if err != nil {
		t.Fatal(err)
	}
	ctb, err := b.Ensure(ctx, tab)
	if err != nil {
		t.Fatal(err)
	}
	// iceberg-go retries a commit that lost a race (refreshing the table
	// and replaying the commit onto it) only when the table asks for it;
	// any engine or operator may set these properties.
	ice, err := raw.LoadTable(ctx, cta.Identifier())
	if err != nil {
		t.Fatal(err)
	}
	tx := ice.NewTransaction()
	if err := tx.SetProperties(iceberg.Properties{icetable.CommitNumRetriesKey: "3", icetable.CommitMinRetryWaitMsKey: "10", icetable.CommitMaxRetryWaitMsKey: "20"}); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Archive(ctx, cta, dayN(1), dayN(0), dayN(1), cold.Readings(dayRows(t, 0, 1))); err != nil {
		t.Fatal(err)
	}
	var raced error
	racer.before = func(ctx context.Context) {
		_, raced = a.Archive(ctx, cta, dayN(3), dayN(1), dayN(3), cold.Readings(dayRows(t, 1, 3)))
	}
	_, err = b.Archive(ctx, ctb, dayN(2), dayN(1), dayN(2), cold.Readings(dayRows(t, 1, 2)))
	if raced != nil {
		t.Fatalf("committer A: %v", raced)
	}
	w, ok, werr := a.Watermark(ctx, cta)
	if werr != nil || !ok {
		t.Fatalf("watermark: %v, %v", ok, werr)
	}
	n := 0
	for _, err := range a.Scan(ctx, cta, series.Range{}) {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	if !guarded {
		// The control: without the check the replay lands.
		if err != nil || !w.Equal(dayN(2)) {
			t.Fatalf("with the check off: B %v, W %v; want B's replay to land and move W back to day 2, or the race is not what this test thinks", err, w)
		}
		return
	}
	t.Logf("B's commit: %v", err)
	if !errors.Is(err, cold.ErrWatermarkBackwards) {
		t.Errorf("B's commit prepared at W day 1, after A moved W to day 3: %v; want it refused as moving W back", err)
	}
	if !w.Equal(dayN(3)) {
		t.Errorf("W %s after the refused replay, want day 3", cold.FormatTime(w))
	}
	if want := 3 * 96; n != want {
		t.Errorf("%d readings in the cold table, want A's %d alone", n, want)
	}
	if w2, _, err := b.Watermark(ctx, ctb); err != nil || !w2.Equal(dayN(3)) {
		t.Errorf("W read through B: %v, %v", w2, err)
	}
}

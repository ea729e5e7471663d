package store_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/meterstore/meterstore/catalog"
	"github.com/meterstore/meterstore/internal/pgtest"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
	"github.com/meterstore/meterstore/store"
)

// powerTable declares quarter-hour electricity readings in daily
// partitions: the table of a metering point operator's load profiles.
func powerTable() store.Table {
	return store.Table{
		Name:        "power",
		TimeModel:   series.Interval,
		Commodity:   metering.Electricity,
		Resolutions: []metering.Resolution{metering.QuarterHour},
		Width:       series.Daily,
		Headroom:    48 * time.Hour,
	}
}

// quarterHours returns a day of readings of one market location, 0.25 kWh
// each, starting at local midnight in Berlin on 2 March 2026.
func quarterHours() []store.Reading {
	start := time.Date(2026, 3, 1, 23, 0, 0, 0, time.UTC) // 00:00 in Berlin
	rows := make([]store.Reading, 96)
	for i := range rows {
		from := start.Add(time.Duration(i) * 15 * time.Minute)
		rows[i] = store.Reading{
			MaLo:         "50000000005", // the last digit is a check digit
			OBIS:         "1-1:1.29.0",
			From:         from,
			To:           from.Add(15 * time.Minute),
			Value:        250_000, // 0.25, in millionths
			Unit:         metering.KilowattHour,
			Quality:      metering.TrueValue,
			Resolution:   metering.QuarterHour,
			Version:      20260302120000,
			VersionScope: "9900000000003:2026-03",
		}
	}
	return rows
}

// open opens a store of powerTable on a fresh test database and a
// warehouse in a temporary directory; the returned function releases both.
func open(ctx context.Context) (*store.Store, func()) { return openWith(ctx, powerTable()) }

// openWith opens a store of tables as open does.
func openWith(ctx context.Context, tables ...store.Table) (*store.Store, func()) {
	url, drop, err := pgtest.ExampleDB("example")
	if err != nil {
		log.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "meterstore-example-")
	if err != nil {
		log.Fatal(err)
	}
	pcfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		log.Fatal(err)
	}
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		log.Fatal(err)
	}
	wh, err := catalog.OpenWarehouse(ctx, "file://"+dir)
	if err != nil {
		log.Fatal(err)
	}
	// The catalog's log lives in the same database; the watermark check
	// comes with it.
	cat, closeCat, err := store.OpenCatalog(ctx, store.CatalogOptions{Warehouse: wh, Postgres: pcfg})
	if err != nil {
		log.Fatal(err)
	}
	s, err := store.Open(ctx, store.Options{
		Pool:    pool,
		Catalog: cat,
		Tables:  tables,
		Archive: store.ArchiveOptions{SettlementLag: 14 * 24 * time.Hour, Step: 24 * time.Hour},
		Query:   store.QueryOptions{Threads: 1, MemoryLimit: "512MB", CacheDir: dir},
	})
	if err != nil {
		log.Fatal(err)
	}
	return s, func() {
		closeCat()
		wh.Bucket.Close()
		pool.Close()
		drop()
		os.RemoveAll(dir)
	}
}

// A deployment declared in Go, without a configuration file: a PostgreSQL
// pool for the hot tier, a catalog on a local warehouse for the cold tier.
func ExampleOpen() {
	ctx := context.Background()
	s, done := open(ctx)
	defer done()
	fmt.Println(s.Tables())
	t, _ := s.Declaration("power")
	fmt.Println(t.MergeKey())
	// Output:
	// [power]
	// [malo_id obis_code from]
}

// A day of quarter hours is written once; delivered again, every reading is
// already present. A batch with one bad reading writes nothing and names it.
func ExampleStore_Write() {
	ctx := context.Background()
	s, done := open(ctx)
	defer done()
	if err := s.CreatePartitions(ctx, time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 3, 0, 0, 0, 0, time.UTC)); err != nil {
		log.Fatal(err)
	}
	rows := quarterHours()
	res, err := s.Write(ctx, "power", rows)
	fmt.Println(res.Inserted, res.Present, err)
	res, err = s.Write(ctx, "power", rows)
	fmt.Println(res.Inserted, res.Present, err)

	rows[5].From = rows[5].From.Add(7 * time.Minute) // off the quarter-hour grid
	_, err = s.Write(ctx, "power", rows)
	var e *store.Error
	if errors.As(err, &e) {
		fmt.Println(e.Kind, e.Rows)
	}
	// Output:
	// 96 0 <nil>
	// 0 96 <nil>
	// invalid input [5]
}

// One SQL statement over both tiers: readings resolves versions,
// readings_versions keeps them all.
func ExampleStore_Query() {
	ctx := context.Background()
	s, done := open(ctx)
	defer done()
	if err := s.CreatePartitions(ctx, time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 3, 0, 0, 0, 0, time.UTC)); err != nil {
		log.Fatal(err)
	}
	rows := quarterHours()
	if _, err := s.Write(ctx, "power", rows); err != nil {
		log.Fatal(err)
	}
	// A correction of the first quarter hour, as a new version.
	fix := rows[0]
	fix.Version++
	fix.Value = 300_000
	if _, err := s.Write(ctx, "power", []store.Reading{fix}); err != nil {
		log.Fatal(err)
	}
	res, err := s.Query(ctx, "power", `SELECT count(*), CAST(sum(value) AS VARCHAR) FROM readings`)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Rows[0]...)
	res, err = s.Query(ctx, "power", `SELECT count(*) FROM readings_versions`)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(res.Rows[0]...)
	// Output:
	// 96 24.050000
	// 97
}

// Each reading of a write gets an outcome, decided by version: a
// correction under a higher version supersedes the stored one, a delivery
// under a lower version is stored but shadowed.
func ExampleStore_Write_outcomes() {
	ctx := context.Background()
	s, done := open(ctx)
	defer done()
	if err := s.CreatePartitions(ctx, time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 3, 0, 0, 0, 0, time.UTC)); err != nil {
		log.Fatal(err)
	}
	rows := quarterHours()[:3]
	res, _ := s.Write(ctx, "power", rows)
	fmt.Println(res.Status)
	fix, old := rows[0], rows[1]
	fix.Version, fix.Value = rows[0].Version+1, 300_000
	old.Version, old.Value = rows[1].Version-1, 200_000
	res, err := s.Write(ctx, "power", []store.Reading{fix, old, rows[2]})
	fmt.Println(res.Status, res.Superseded, res.Shadowed, res.Present, err)
	// Output:
	// [inserted inserted inserted]
	// [superseded shadowed present] 1 1 1 <nil>
}

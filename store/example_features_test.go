package store_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
	"github.com/meterstore/meterstore/store"
)

// dayOne is the Berlin day of quarterHours, as UTC bounds.
var dayOne = [2]time.Time{time.Date(2026, 3, 1, 23, 0, 0, 0, time.UTC), time.Date(2026, 3, 2, 23, 0, 0, 0, time.UTC)}

// createDay creates the partitions of quarterHours' day.
func createDay(ctx context.Context, s *store.Store) {
	if err := s.CreatePartitions(ctx, time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 3, 3, 0, 0, 0, 0, time.UTC)); err != nil {
		log.Fatal(err)
	}
}

// One series read in Go, typed: its resolved readings, the latest one and
// the quarter hours the calendar expects that no reading covers. The
// market location's check digit is checked and the OBIS code taken in any
// spelling.
func ExampleStore_SeriesReadings() {
	ctx := context.Background()
	s, done := open(ctx)
	defer done()
	createDay(ctx, s)
	rows := quarterHours()
	rows = append(rows[:40], rows[44:]...) // 10:00 to 11:00 never arrived
	if _, err := s.Write(ctx, "power", rows); err != nil {
		log.Fatal(err)
	}
	q := store.SeriesQuery{MaLo: "50000000005", OBIS: "1-1:1.29.0*255", From: dayOne[0], To: dayOne[1]}
	got, err := s.SeriesReadings(ctx, "power", q)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(got), got[0].Value)
	last, ok, err := s.LatestReading(ctx, "power", q)
	fmt.Println(last.From.In(berlin()).Format("15:04"), ok, err)
	gaps, err := s.Gaps(ctx, "power", q)
	for _, g := range gaps {
		fmt.Println(g.From.In(berlin()).Format("15:04"), g.To.In(berlin()).Format("15:04"))
	}
	if _, err := s.SeriesReadings(ctx, "power", store.SeriesQuery{MaLo: "50000000006", OBIS: q.OBIS}); err != nil {
		fmt.Println("wrong check digit refused")
	}
	// Output:
	// 92 0.250000
	// 23:45 true <nil>
	// 10:00 11:00
	// wrong check digit refused
}

// Bound parameters: the values are never made SQL text, so a market
// location that tries to end the string stays a value, and a bound range
// bounds what the tiers are read for as a literal does.
func ExampleStore_Prepare() {
	ctx := context.Background()
	s, done := open(ctx)
	defer done()
	createDay(ctx, s)
	if _, err := s.Write(ctx, "power", quarterHours()); err != nil {
		log.Fatal(err)
	}
	const q = `SELECT count(*) FROM readings WHERE malo_id = $1 AND "from" >= $2 AND "from" < $3`
	for _, malo := range []string{"50000000005", "x' OR '1' = '1"} {
		st, err := s.Prepare(ctx, q, store.StatementOptions{Table: "power", Params: []any{malo, dayOne[0], dayOne[0].Add(6 * time.Hour)}})
		if err != nil {
			log.Fatal(err)
		}
		res, err := st.Query(ctx)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(res.Rows[0]...)
	}
	// Output:
	// 24
	// 0
}

// Substitute values (Ersatzwerte) appended authoritatively: delivered
// without a version, each is given the next version of its reading and
// wins over the stored one; who formed them and where the delivery came
// from are recorded in the table's declared columns.
func ExampleStore_WriteWith() {
	ctx := context.Background()
	t := powerTable()
	t.Columns = append([]series.Column{{Name: store.ColumnSubstitutedBy, Type: series.Text}}, series.ProvenanceColumns()...)
	s, done := openWith(ctx, t)
	defer done()
	createDay(ctx, s)
	rows := quarterHours()[:2]
	if _, err := s.Write(ctx, "power", rows); err != nil {
		log.Fatal(err)
	}
	sub := rows[0]
	sub.Version, sub.Quality, sub.Value = 0, metering.Substitute, 260_000
	res, err := s.WriteWith(ctx, "power", []store.Reading{sub}, store.WriteOptions{
		Substitute: true, By: "9900000000003",
		Source: store.Source{Kind: series.SourceCSV, Ref: "substitutes.csv"},
	})
	fmt.Println(res.Status, res.Versions[0] == rows[0].Version+1, err)
	out, err := s.Query(ctx, "power", `SELECT CAST(value AS VARCHAR), quality, substituted_by, source_kind, source_ref
		FROM readings ORDER BY "from" LIMIT 1`)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(out.Rows[0]...)
	// Output:
	// [superseded] true <nil>
	// 0.260000 67 9900000000003 csv substitutes.csv
}

func berlin() *time.Location {
	loc, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		log.Fatal(err)
	}
	return loc
}

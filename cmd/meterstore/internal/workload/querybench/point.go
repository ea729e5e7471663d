package querybench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/meterstore/meterstore/cmd/meterstore/internal/workload/hotbench"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/store"
)

// A PointCase is a small question measured with one client and with two
// at once: latency percentiles in milliseconds and answers per second.
type PointCase struct {
	Name string `json:"name"`
	SQL  string `json:"sql,omitempty"`
	// Rows is the rows of the first meter's answer.
	Rows  int     `json:"rows"`
	P50   float64 `json:"p50_ms"`
	P99   float64 `json:"p99_ms"`
	QPS   float64 `json:"answers_per_s"`
	P50x2 float64 `json:"p50_ms_2_clients"`
	P99x2 float64 `json:"p99_ms_2_clients"`
	QPSx2 float64 `json:"answers_per_s_2_clients"`
}

// pointMeters is how many meters the point questions pick from, at
// random, so that no answer is the last one's again.
const pointMeters = 64

// measurePoint runs (g) to (j): one meter's hot day through SQL, through
// the typed read, and by PostgreSQL alone with a prepared statement of
// the same resolved rows; and one meter's year across both tiers through
// the typed read with its footer cache warm. Each runs PointRuns times
// with one client, then with two at once, after a warm-up.
func measurePoint(ctx context.Context, s *store.Store, pool *pgxpool.Pool, c Config, res *Result) error {
	cal, _ := metering.NewCalendar()
	r, err := s.Query(ctx, "power", fmt.Sprintf(`SELECT DISTINCT malo_id FROM readings WHERE "from" >= %s AND "from" < %s ORDER BY 1 LIMIT %d`,
		lit(res.Watermark), lit(res.Watermark.Add(24*time.Hour)), pointMeters))
	if err != nil {
		return fmt.Errorf("querybench: point meters: %w", err)
	}
	var meters []string
	for _, row := range r.Rows {
		m, _ := row[0].(string)
		meters = append(meters, m)
	}
	if len(meters) == 0 {
		return fmt.Errorf("querybench: no meter has readings on the first hot day")
	}
	const obis = "1-1:1.29.0"
	day, dayEnd := res.Watermark, res.Watermark.Add(24*time.Hour)
	year := cal.DayStart(metering.Date{Year: c.Start.Year, Month: time.January, Day: 1})
	yearEnd := cal.DayStart(metering.Date{Year: c.Start.Year + 1, Month: time.January, Day: 1})
	sqlDay := `SELECT * FROM readings WHERE malo_id = '%s' AND obis_code = '` + obis + `' AND "from" >= ` + lit(day) + ` AND "from" < ` + lit(dayEnd) + ` ORDER BY "from"`
	pgSQL, err := hotbench.SeriesSQL(ctx, pool, schema, "power")
	if err != nil {
		return err
	}
	res.PointSQL = PointCase{Name: "(g) one meter's hot day through SQL", SQL: fmt.Sprintf(sqlDay, meters[0])}
	res.PointTyped = PointCase{Name: "(h) the same through the typed read"}
	res.PointPostgres = PointCase{Name: "(i) the same resolved rows by PostgreSQL alone, prepared (pgx)", SQL: pgSQL}
	res.PointYear = PointCase{Name: "(j) one meter's year across both tiers through the typed read, footer cache warm"}
	typed := func(m string, from, to time.Time) (int, error) {
		rs, err := s.SeriesReadings(ctx, "power", store.SeriesQuery{MaLo: m, OBIS: obis, From: from, To: to})
		return len(rs), err
	}
	// The steps of (g)'s statements with one client, by name: where its
	// fixed cost goes.
	var (
		stepsMu sync.Mutex
		steps   = map[string][]float64{}
		trace   bool
	)
	cases := []struct {
		c   *PointCase
		ask func(m string) (int, error)
	}{
		{&res.PointSQL, func(m string) (int, error) {
			r, err := s.Query(ctx, "power", fmt.Sprintf(sqlDay, m))
			if err != nil {
				return 0, err
			}
			if trace {
				took := map[string]time.Duration{}
				for _, st := range r.Timing.Steps {
					took[st.Name] += st.Took
				}
				stepsMu.Lock()
				for name, d := range took {
					steps[name] = append(steps[name], ms(d))
				}
				stepsMu.Unlock()
			}
			return len(r.Rows), nil
		}},
		{&res.PointTyped, func(m string) (int, error) { return typed(m, day, dayEnd) }},
		{&res.PointPostgres, func(m string) (int, error) {
			rows, err := pool.Query(ctx, pgSQL, m, obis, day, dayEnd)
			if err != nil {
				return 0, err
			}
			defer rows.Close()
			n := 0
			for rows.Next() {
				if _, err := rows.Values(); err != nil {
					return n, err
				}
				n++
			}
			return n, rows.Err()
		}},
		{&res.PointYear, func(m string) (int, error) { return typed(m, year, yearEnd) }},
	}
	for i, pc := range cases {
		fmt.Fprintf(c.Progress, "\r  point question %d/%d   ", i+1, len(cases))
		n, err := pc.ask(meters[0])
		if err != nil {
			return fmt.Errorf("querybench: %s: %w", pc.c.Name, err)
		}
		pc.c.Rows = n
		for clients := 1; clients <= 2; clients++ {
			trace = clients == 1 && pc.c == &res.PointSQL
			lat, qps, err := pointRuns(pc.ask, meters, c.PointRuns, clients)
			if err != nil {
				return fmt.Errorf("querybench: %s: %w", pc.c.Name, err)
			}
			if clients == 1 {
				pc.c.P50, pc.c.P99, pc.c.QPS = percentile(lat, 0.5), percentile(lat, 0.99), qps
			} else {
				pc.c.P50x2, pc.c.P99x2, pc.c.QPSx2 = percentile(lat, 0.5), percentile(lat, 0.99), qps
			}
		}
	}
	fmt.Fprintln(c.Progress)
	if res.Timing == nil {
		res.Timing = map[string]float64{}
	}
	for name, xs := range steps {
		res.Timing["g.mean."+name] = mean(xs)
	}
	if res.PointSQL.Rows != res.PointTyped.Rows || res.PointTyped.Rows != res.PointPostgres.Rows {
		return fmt.Errorf("querybench: the point questions disagree: SQL %d rows, typed %d, PostgreSQL %d",
			res.PointSQL.Rows, res.PointTyped.Rows, res.PointPostgres.Rows)
	}
	res.PointSQLRatio = res.PointSQL.P50 / res.PointPostgres.P50
	res.PointTypedRatio = res.PointTyped.P50 / res.PointPostgres.P50
	res.PointQPSRatio = res.PointTyped.QPSx2 / res.PointPostgres.QPSx2
	return nil
}

// pointRuns asks runs questions of random meters, one warm-up each
// client first, with clients at once, and returns each answer's
// latency in milliseconds and the answers per second.
func pointRuns(ask func(m string) (int, error), meters []string, runs, clients int) ([]float64, float64, error) {
	var (
		mu   sync.Mutex
		lat  []float64
		errs []error
		wg   sync.WaitGroup
	)
	for i := range clients {
		if _, err := ask(meters[i%len(meters)]); err != nil {
			return nil, 0, err
		}
	}
	start := time.Now()
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(i), 46))
			for range runs / clients {
				m := meters[rng.IntN(len(meters))]
				begin := time.Now()
				_, err := ask(m)
				el := ms(time.Since(begin))
				mu.Lock()
				lat = append(lat, el)
				if err != nil {
					errs = append(errs, err)
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	el := time.Since(start)
	if len(errs) > 0 {
		return nil, 0, errs[0]
	}
	return lat, float64(len(lat)) / el.Seconds(), nil
}

// mean returns the mean of xs, 0 for none.
func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

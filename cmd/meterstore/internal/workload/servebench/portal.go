package servebench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/meterstore/meterstore/cmd/meterstore/internal/workload/hotbench"
)

// The names of the portal workload's cases.
const (
	PortalAlone    = "typed HTTP, alone"
	PortalPostgres = "PostgreSQL alone, pgx prepared"
	PortalLoaded   = "typed HTTP, under ingest load"
)

// portalTurns is how many turns the typed reads and PostgreSQL take
// alone, alternating who goes first, so that whatever else loads the
// machine falls on both alike.
const portalTurns = 2

// A portal is the portal workload of a run: clients asking random
// meters' first day, over serve's typed series resource and from
// PostgreSQL alone.
type portal struct {
	meters   []string
	obis     string
	from, to time.Time
	want     int64 // readings of a meter's day
	sql      string
	pool     *pgxpool.Pool // PortalClients connections
}

// newPortal picks the meters of the first day and prepares PostgreSQL's
// side: its own pool of PortalClients connections, each of which prepares
// the statement once (pgx's statement cache) and reuses it.
func (r *run) newPortal(ctx context.Context) (*portal, error) {
	p := &portal{from: r.cal.DayStart(r.cfg.Fixture.Day), to: r.cal.DayEnd(r.cfg.Fixture.Day)}
	seen := map[string]bool{}
	for _, b := range r.first {
		for _, x := range b.rows {
			if !seen[x.MaLo] {
				seen[x.MaLo] = true
				p.meters = append(p.meters, x.MaLo)
			}
			p.obis = x.OBIS
		}
	}
	if len(p.meters) == 0 {
		return nil, fmt.Errorf("servebench: the portal workload: no meters in the first day")
	}
	p.want = int64(p.to.Sub(p.from) / (15 * time.Minute))
	var err error
	if p.sql, err = hotbench.SeriesSQL(ctx, r.pool, r.schema, httpTable); err != nil {
		return nil, err
	}
	pc, err := pgxpool.ParseConfig(r.cfg.PgURL)
	if err != nil {
		return nil, fmt.Errorf("servebench: the portal workload's pool: %w", err)
	}
	pc.MaxConns, pc.MinConns = int32(r.cfg.PortalClients), int32(r.cfg.PortalClients)
	if p.pool, err = pgxpool.NewWithConfig(ctx, pc); err != nil {
		return nil, fmt.Errorf("servebench: the portal workload's pool: %w", err)
	}
	r.closers = append(r.closers, p.pool.Close)
	return p, nil
}

// typed asks serve for a random meter's day through the typed resource.
func (p *portal) typed(h *httpClient) func(context.Context, *rand.Rand) queryAnswer {
	q := url.Values{"from": {p.from.UTC().Format(time.RFC3339)}, "to": {p.to.UTC().Format(time.RFC3339)}}.Encode()
	return func(ctx context.Context, rng *rand.Rand) queryAnswer {
		m := p.meters[rng.IntN(len(p.meters))]
		u := h.base + "/v1/tables/" + httpTable + "/series/" + url.PathEscape(m) + "/" + url.PathEscape(p.obis) + "?" + q
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return queryAnswer{err: err.Error()}
		}
		return h.csv(req)
	}
}

// postgres asks PostgreSQL alone for a random meter's day, the same
// resolved readings, and counts the rows as they come.
func (p *portal) postgres(ctx context.Context, rng *rand.Rand) queryAnswer {
	m := p.meters[rng.IntN(len(p.meters))]
	start := time.Now()
	rows, err := p.pool.Query(ctx, p.sql, m, p.obis, p.from, p.to)
	if err != nil {
		return queryAnswer{err: err.Error(), took: time.Since(start)}
	}
	// Each row is received and counted, not decoded: the HTTP clients
	// count an answer's lines without parsing them, so that both sides'
	// clients do the same work on the cores they share with the servers.
	var a queryAnswer
	for rows.Next() {
		a.rows++
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		a.err = err.Error()
	}
	a.took = time.Since(start)
	return a
}

// warm asks once on each of clients goroutines at once, so that every
// connection is open and has prepared its statement before the clock
// runs.
func warm(ctx context.Context, clients int, ask func(context.Context, *rand.Rand) queryAnswer) error {
	errs := make([]string, clients)
	var wg sync.WaitGroup
	for i := range clients {
		wg.Go(func() { errs[i] = ask(ctx, rand.New(rand.NewPCG(uint64(i), 0))).err })
	}
	wg.Wait()
	for _, e := range errs {
		if e != "" {
			return fmt.Errorf("servebench: the portal workload's warm-up: %s", e)
		}
	}
	return nil
}

// portalAlone, with Portal, runs the portal clients against serve's typed
// resource and against PostgreSQL alone, PortalClients at once, in
// portalTurns turns of QueryFor between them.
func (r *run) portalAlone(ctx context.Context) error {
	if !r.cfg.Portal {
		return nil
	}
	p, err := r.newPortal(ctx)
	if err != nil {
		return err
	}
	r.portal = p
	typed := p.typed(r.client)
	for _, ask := range []func(context.Context, *rand.Rand) queryAnswer{typed, p.postgres} {
		if err := warm(ctx, r.cfg.PortalClients, ask); err != nil {
			return err
		}
	}
	var overHTTP, overPG []loopRun
	peak, err := r.phase(func() error {
		for k := range portalTurns {
			for turn := range 2 {
				stop, cancel := context.WithTimeout(ctx, r.cfg.QueryFor/portalTurns)
				if (k+turn)%2 == 0 {
					overHTTP = append(overHTTP, loop(ctx, stop.Done(), r.cfg.PortalClients, p.want, typed))
				} else {
					overPG = append(overPG, loop(ctx, stop.Done(), r.cfg.PortalClients, p.want, p.postgres))
				}
				cancel()
			}
		}
		return ctx.Err()
	})
	if err != nil {
		return err
	}
	alone, pg := summarize(r.cfg.PortalClients, overHTTP...), summarize(r.cfg.PortalClients, overPG...)
	alone.Name, alone.PeakRSS, pg.Name = PortalAlone, peak, PortalPostgres
	r.res.Portal = append(r.res.Portal, alone, pg)
	r.res.PortalSQL = p.sql
	if pg.PerSec > 0 {
		r.res.PortalQPSvsPostgres = alone.PerSec / pg.PerSec
	}
	r.log.Info("servebench: portal workload alone done", "typed", alone.Answers, "postgres", pg.Answers)
	return nil
}

// portalLoad runs the portal clients against serve's typed resource until
// stop is closed; none without Portal.
func (r *run) portalLoad(ctx context.Context, stop <-chan struct{}) *loopRun {
	if r.portal == nil {
		return nil
	}
	l := loop(ctx, stop, r.cfg.PortalClients, r.portal.want, r.portal.typed(r.client))
	return &l
}

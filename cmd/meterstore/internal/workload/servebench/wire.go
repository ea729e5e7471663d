package servebench

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/jackc/pgx/v5"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
)

// Wire is the large result read through one protocol.
type Wire struct {
	Protocol   string  `json:"protocol"`
	Rows       int64   `json:"rows"`
	Seconds    float64 `json:"seconds"`
	RowsPerSec float64 `json:"rows_per_sec"`
	VsHTTP     float64 `json:"vs_http"`
}

// Point is a point query's latency over HTTP and the PostgreSQL protocol,
// one client asking the same statement in turns.
type Point struct {
	Queries int     `json:"queries"`
	HTTPp50 float64 `json:"http_p50_ms"`
	PGp50   float64 `json:"pg_p50_ms"`
	Ratio   float64 `json:"pg_vs_http"`
}

// pointQueries is how many times each protocol asks the point query.
const pointQueries = 200

// wire, with LargeResult, reads the large result again through Flight SQL
// and the PostgreSQL protocol (pgx, binary rows), and measures a point
// query over HTTP and pgx; after the count, so that the rows are known.
func (r *run) wire(ctx context.Context) error {
	if !r.cfg.LargeResult || r.res.Large == nil {
		return nil
	}
	addrs := map[string]string{}
	for len(addrs) < 2 {
		select {
		case a := <-r.srv.others:
			addrs[a[0]] = a[1]
		case <-time.After(5 * time.Second):
			return fmt.Errorf("servebench: serve did not say where it serves Flight SQL and postgres: %v", addrs)
		}
	}
	stmt := `SELECT * FROM ` + httpTable + `.readings_versions`
	l := r.res.Large
	r.res.Wire = append(r.res.Wire, Wire{Protocol: "HTTP CSV", Rows: l.Rows, Seconds: l.Seconds})
	conn, err := pgx.Connect(ctx, fmt.Sprintf("postgres://bench:%s@%s/meterstore?sslmode=disable", r.dep.token, addrs["postgres"]))
	if err != nil {
		return fmt.Errorf("servebench: postgres: %w", err)
	}
	defer conn.Close(context.Background())
	start := time.Now()
	rows, err := conn.Query(ctx, stmt)
	if err != nil {
		return fmt.Errorf("servebench: postgres: %w", err)
	}
	var n int64
	for rows.Next() {
		n++
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("servebench: postgres: %w", err)
	}
	r.res.Wire = append(r.res.Wire, Wire{Protocol: "PostgreSQL (pgx)", Rows: n, Seconds: time.Since(start).Seconds()})
	if n, secs, err := r.flight(ctx, addrs["flight sql"], stmt); err != nil {
		return err
	} else {
		r.res.Wire = append(r.res.Wire, Wire{Protocol: "Flight SQL", Rows: n, Seconds: secs})
	}
	for i := range r.res.Wire {
		w := &r.res.Wire[i]
		w.RowsPerSec = float64(w.Rows) / w.Seconds
		w.VsHTTP = w.RowsPerSec / r.res.Wire[0].RowsPerSec
		if w.Rows != l.Rows {
			return fmt.Errorf("servebench: %s read %d rows of the large result, HTTP %d", w.Protocol, w.Rows, l.Rows)
		}
	}
	return r.point(ctx, conn)
}

// flight reads stmt through Flight SQL at addr and returns its rows and
// the time taken.
func (r *run) flight(ctx context.Context, addr, stmt string) (int64, float64, error) {
	cl, err := flightsql.NewClient(addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return 0, 0, fmt.Errorf("servebench: flight sql: %w", err)
	}
	defer cl.Close()
	ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+r.dep.token)
	start := time.Now()
	info, err := cl.Execute(ctx, stmt)
	if err != nil {
		return 0, 0, fmt.Errorf("servebench: flight sql: %w", err)
	}
	rdr, err := cl.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		return 0, 0, fmt.Errorf("servebench: flight sql: %w", err)
	}
	defer rdr.Release()
	var n int64
	for rdr.Next() {
		n += rdr.RecordBatch().NumRows()
	}
	if err := rdr.Err(); err != nil {
		return 0, 0, fmt.Errorf("servebench: flight sql: %w", err)
	}
	return n, time.Since(start).Seconds(), nil
}

// point asks one reading's value pointQueries times over HTTP and as
// many over conn, in alternating turns, and keeps the medians.
func (r *run) point(ctx context.Context, conn *pgx.Conn) error {
	var malo string
	var from time.Time
	if err := conn.QueryRow(ctx, `SELECT malo_id, "from" FROM `+httpTable+`.readings ORDER BY malo_id, "from" LIMIT 1`).Scan(&malo, &from); err != nil {
		return fmt.Errorf("servebench: postgres: %w", err)
	}
	stmt := fmt.Sprintf(`SELECT value FROM %s.readings WHERE malo_id = '%s' AND "from" = '%s'`, httpTable, malo, from.UTC().Format(time.RFC3339))
	var overHTTP, overPG []time.Duration
	for range pointQueries {
		a := r.client.query(ctx, httpTable, stmt)
		if a.err != "" || a.rows != 1 {
			return fmt.Errorf("servebench: the point query over HTTP: %d rows, %s", a.rows, a.err)
		}
		overHTTP = append(overHTTP, a.took)
		start := time.Now()
		var v any
		if err := conn.QueryRow(ctx, stmt).Scan(&v); err != nil {
			return fmt.Errorf("servebench: the point query over postgres: %w", err)
		}
		overPG = append(overPG, time.Since(start))
	}
	p := &Point{Queries: pointQueries, HTTPp50: median(overHTTP), PGp50: median(overPG)}
	p.Ratio = p.PGp50 / p.HTTPp50
	r.res.Point = p
	return nil
}

// median returns the median of d in milliseconds.
func median(d []time.Duration) float64 {
	slices.Sort(d)
	return float64(d[len(d)/2]) / float64(time.Millisecond)
}

package hotbench

import (
	"context"
	"log/slog"
	"strings"

	"github.com/jackc/pgx/v5/pgxpool"
)

// resetStatements clears pg_stat_statements before a run and reports
// whether the server keeps it: it must be in shared_preload_libraries.
func resetStatements(ctx context.Context, pool *pgxpool.Pool, log *slog.Logger) bool {
	_, err := pool.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_stat_statements`)
	if err == nil {
		_, err = pool.Exec(ctx, `SELECT pg_stat_statements_reset()`)
	}
	if err != nil {
		log.Info("hotbench: no server time per statement (pg_stat_statements not loaded)", "err", err)
		return false
	}
	return true
}

// serverTime returns the statements that took the most server time since
// resetStatements, each with its time per reading of the fixture.
func serverTime(ctx context.Context, pool *pgxpool.Pool, readings int) ([]ServerStatement, error) {
	rows, err := pool.Query(ctx, `SELECT query, calls, rows, total_exec_time FROM pg_stat_statements
WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
ORDER BY total_exec_time DESC LIMIT 24`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []ServerStatement
	for rows.Next() {
		var s ServerStatement
		if err := rows.Scan(&s.Query, &s.Calls, &s.Rows, &s.Ms); err != nil {
			return nil, err
		}
		s.Query = strings.Join(strings.Fields(s.Query), " ")
		if len(s.Query) > 160 {
			s.Query = s.Query[:160] + "…"
		}
		s.MicrosPerReading = s.Ms * 1000 / float64(readings)
		out = append(out, s)
	}
	return out, rows.Err()
}

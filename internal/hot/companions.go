package hot

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/meterstore/meterstore/series"
)

// companions returns the names of the relations besides its parent and
// partitions that table t owns with integrity i in layout l: its
// ownership relation, in the dictionary layouts its aggregate of days,
// dirty log and tokens (dayagg.go), and its dictionaries.
func companions(t *series.Table, i series.Integrity, l layout) []string {
	var names []string
	if i == series.IntegrityStatement {
		names = append(names, ownersName(t))
		if sumsDays(l) {
			names = append(names, daysName(t), dirtyName(t), dayTokensName(t))
		}
	}
	return append(names, l.dictNames(t)...)
}

// refuseTaken fails with InvalidConfig if a relation t would own with
// integrity i in layout l exists already: it belongs to someone else (a
// declared table whose name it is, or a foreign one), and creating over it
// would fail with PostgreSQL's bare "already exists".
func (h *Tier) refuseTaken(ctx context.Context, tx pgx.Tx, op string, t *series.Table, i series.Integrity, l layout) error {
	for _, name := range companions(t, i, l) {
		var taken bool
		if err := tx.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, h.ident(name)).Scan(&taken); err != nil {
			return err
		}
		if taken {
			return &series.Error{Kind: series.InvalidConfig, Op: op, Table: t.Name,
				Err: fmt.Errorf("relation %s exists, and table %s would need its name (integrity %s, layout %s): rename one of them", h.ident(name), t.Name, i, l)}
		}
	}
	return nil
}

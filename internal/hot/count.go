package hot

import (
	"context"
	"time"

	"github.com/meterstore/meterstore/series"
)

// CountBelow returns the number of readings of t in attached partitions
// whose interval starts before w. Below the watermark that number must be
// zero: a row there is one no query reads from PostgreSQL.
func (h *Tier) CountBelow(ctx context.Context, t *series.Table, w time.Time) (int64, error) {
	if err := t.Validate(); err != nil {
		return 0, err
	}
	l, err := h.layoutOf(ctx, h.pool, t)
	if err != nil {
		return 0, classify("count below watermark", t.Name, err)
	}
	var n int64
	err = h.pool.QueryRow(ctx, `SELECT count(*) FROM `+h.ident(t.Name)+` WHERE `+l.fromColumn()+` < `+l.fromExpr(t, `$1::timestamptz`), w).Scan(&n)
	if err != nil {
		return 0, classify("count below watermark", t.Name, err)
	}
	return n, nil
}

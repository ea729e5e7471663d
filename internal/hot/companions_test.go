package hot

import (
	"context"
	"strings"
	"testing"

	"github.com/meterstore/meterstore/series"
)

// TestCompanionNameTaken declares a statement table whose ownership
// relation or dictionary would take the name of a table that exists: the
// declaration is refused with InvalidConfig naming the relation, creates
// nothing, and the other table keeps its rows. The upgrade of a rows
// table to statement is refused the same way.
func TestCompanionNameTaken(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"power_series", "power_attrs", "power_operators"} {
		t.Run(name, func(t *testing.T) {
			h, pool := newTier(t, Options{})
			other := lastgang(name)
			other.Integrity = series.IntegrityExclusion
			declare(t, h, other)
			mustWrite(t, h, other, meterDay(1, 1))

			tab := lastgang("power")
			tab.Integrity = series.IntegrityStatement
			err := wantError(t, h.Ensure(ctx, tab), series.InvalidConfig)
			if !strings.Contains(err.Error(), name) {
				t.Errorf("error %q does not name %s", err, name)
			}
			var exists, declared bool
			if err := pool.QueryRow(ctx, `SELECT to_regclass('meterstore.power') IS NOT NULL,
				EXISTS (SELECT 1 FROM meterstore.hot_tables WHERE name = 'power')`).Scan(&exists, &declared); err != nil {
				t.Fatal(err)
			}
			if exists || declared {
				t.Errorf("refused declaration left relation %v, declaration %v", exists, declared)
			}
			var n int
			if err := pool.QueryRow(ctx, `SELECT count(*) FROM meterstore.`+name).Scan(&n); err != nil || n != 96 {
				t.Errorf("the other table: %d rows, %v", n, err)
			}
		})
	}
	t.Run("upgrade", func(t *testing.T) {
		h, pool := newTier(t, Options{})
		tab := lastgang("power")
		tab.Integrity = series.IntegrityExclusion
		declare(t, h, tab)
		declare(t, h, lastgang("power_operators"))
		up := lastgang("power")
		up.Integrity = series.IntegrityStatement
		wantError(t, h.Ensure(ctx, up), series.InvalidConfig)
		var integrity string
		var owners bool
		if err := pool.QueryRow(ctx, `SELECT definition->>'integrity', to_regprocedure('meterstore.power_rows_check()') IS NOT NULL
			FROM meterstore.hot_tables WHERE name = 'power'`).Scan(&integrity, &owners); err != nil {
			t.Fatal(err)
		}
		if integrity != series.IntegrityExclusion.String() || owners {
			t.Errorf("after the refused upgrade: integrity %q, check function %v", integrity, owners)
		}
	})
}

package flightapi

import (
	"errors"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	tables := []string{"power", "heat"}
	for _, c := range []struct{ sql, table, out string }{
		{"SELECT * FROM power.readings", "power", "SELECT * FROM readings"},
		{"SELECT * FROM meterstore . heat . readings_versions r", "heat", "SELECT * FROM readings_versions r"},
		{`SELECT * FROM "meterstore"."power"."readings"`, "power", `SELECT * FROM "readings"`},
		{"SELECT power.readings.value FROM power.readings", "power", "SELECT readings.value FROM readings"},
		{"SELECT * FROM power.system.tables", "power", "SELECT * FROM system.tables"},
		{"SELECT * FROM meterstore.system.tables", "", "SELECT * FROM system.tables"},
		{"SELECT * FROM system.config", "", "SELECT * FROM system.config"},
		{"SELECT 'heat.readings', $$power.readings$$, 1 FROM power.readings -- heat.readings\n",
			"power", "SELECT 'heat.readings', $$power.readings$$, 1 FROM readings -- heat.readings\n"},
		{"SELECT r.readings FROM power.readings_versions AS r /* heat.readings */", "power",
			"SELECT r.readings FROM readings_versions AS r /* heat.readings */"},
		{"SELECT 1", "", "SELECT 1"},
		// Another table keeps its name, which the store reads it by.
		{"SELECT * FROM power.readings JOIN heat.readings USING (malo_id)", "power", "SELECT * FROM readings JOIN heat.readings USING (malo_id)"},
		{`SELECT * FROM meterstore.heat.readings h, "meterstore".power.readings_versions p, heat.readings`, "heat",
			`SELECT * FROM readings h, power.readings_versions p, readings`},
	} {
		table, out, system, err := resolve(c.sql, tables)
		if err != nil || table != c.table || out != c.out || system != strings.Contains(out, "system.") {
			t.Errorf("resolve(%q) = %q, %q, %v; want %q, %q", c.sql, table, out, err, c.table, c.out)
		}
	}
	for _, sql := range []string{
		"SELECT * FROM readings",
		"SELECT * FROM meterstore.gas.readings",
		"SELECT * FROM power.readings JOIN meterstore.gas.readings USING (malo_id)",
	} {
		if _, _, _, err := resolve(sql, tables); !errors.Is(err, ErrNaming) {
			t.Errorf("resolve(%q): %v; want ErrNaming", sql, err)
		}
	}
}

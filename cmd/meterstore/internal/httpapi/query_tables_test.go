package httpapi

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/meterstore/meterstore/config"
	"github.com/meterstore/meterstore/internal/pgtest"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
	"github.com/meterstore/meterstore/store"
)

// TestQueryOtherTables: a statement on power that names feedin.readings
// reads both, X-MeterStore-Tables reports each table read, and a token
// limited to power is refused, whichever table the request names.
func TestQueryOtherTables(t *testing.T) {
	dir := t.TempDir()
	src := fmt.Sprintf("[postgres]\nurl = %q\ndata_dir = %q\n[warehouse]\nurl = %q\n"+
		"[[table]]\nname = \"power\"\nresolutions = [\"PT15M\"]\n[[table]]\nname = \"feedin\"\nresolutions = [\"PT15M\"]\n",
		pgtest.NewDB(t), dir, "file://"+filepath.Join(dir, "wh"))
	cfg, err := config.Parse([]byte(src), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := store.OpenConfig(t.Context(), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	now := time.Now().UTC()
	day := now.Truncate(24 * time.Hour)
	if err := s.EnsurePartitions(t.Context(), now); err != nil {
		t.Fatal(err)
	}
	for name, n := range map[string]int{"power": 4, "feedin": 2} {
		var rows []store.Reading
		for i := range n {
			from := day.Add(time.Duration(i) * 15 * time.Minute)
			rows = append(rows, store.Reading{
				MaLo: "20000000008", OBIS: "1-1:1.29.0", Commodity: metering.Electricity, From: from, To: from.Add(15 * time.Minute),
				Value: series.Decimal(1_000_000), Unit: metering.KilowattHour, Quality: metering.TrueValue,
				Resolution: metering.QuarterHour, Version: 1, VersionScope: "9900000000003:" + day.Format("2006-01"),
			})
		}
		if _, err := s.Write(t.Context(), name, rows); err != nil {
			t.Fatal(err)
		}
	}
	reporting, reportingTok := token(t, "reporting", config.ScopeQuery)
	powerOnly, powerTok := token(t, "power-reports", config.ScopeQuery)
	powerOnly.Tables = []string{"power"}
	h, err := New(s, Options{Tokens: []config.Token{reporting, powerOnly}})
	if err != nil {
		t.Fatal(err)
	}
	doc := parseOpenAPI(t)
	const sql = `SELECT (SELECT count(*) FROM readings) AS p, (SELECT count(*) FROM feedin.readings) AS f`

	w := queryHTTP(t, h, t.Context(), reportingTok, "text/csv", queryBody("power", sql))
	doc.conforms(t, "POST", queryPath, w)
	if w.Code != 200 || w.Body.String() != "p,f\n4,2\n" {
		t.Fatalf("%d %s", w.Code, w.Body)
	}
	var tables []tableRead
	if err := json.Unmarshal([]byte(w.Header().Get("X-MeterStore-Tables")), &tables); err != nil {
		t.Fatalf("X-MeterStore-Tables %q: %v", w.Header().Get("X-MeterStore-Tables"), err)
	}
	if len(tables) != 2 || tables[0].Table != "power" || tables[1].Table != "feedin" ||
		strings.Join(tables[1].Tiers, ",") != "hot" || tables[1].Watermark != "" {
		t.Errorf("X-MeterStore-Tables %q", w.Header().Get("X-MeterStore-Tables"))
	}

	for _, table := range []string{"power", "feedin"} {
		w := queryHTTP(t, h, t.Context(), powerTok, "text/csv", queryBody(table, sql))
		doc.conforms(t, "POST", queryPath, w)
		if w.Code != 403 || !strings.Contains(w.Body.String(), `"forbidden"`) || !strings.Contains(w.Body.String(), "feedin") {
			t.Errorf("power-only token, table %s: %d %s", table, w.Code, w.Body)
		}
	}
	if w := queryHTTP(t, h, t.Context(), powerTok, "text/csv", queryBody("power", `SELECT count(*) FROM readings`)); w.Code != 200 {
		t.Errorf("power-only token on power alone: %d %s", w.Code, w.Body)
	}
	w = queryHTTP(t, h, t.Context(), reportingTok, "text/csv", queryBody("power", `SELECT count(*) FROM nosuch.readings`))
	doc.conforms(t, "POST", queryPath, w)
	if w.Code != 400 || !strings.Contains(w.Body.String(), `"invalid_query"`) {
		t.Errorf("an undeclared table: %d %s", w.Code, w.Body)
	}
}

package httpapi

import (
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/meterstore/meterstore/config"
)

// BenchmarkSeriesRoute asks the typed series route for one meter's day
// (96 readings, CSV) through the whole handler, as the portal workload of
// bench serve does, to show where a request's time and allocations go
// beside the store's one PostgreSQL round trip.
func BenchmarkSeriesRoute(b *testing.B) {
	s := openTables(b, "[[table]]\nname = \"power\"\nresolutions = [\"PT15M\"]\n")
	day := time.Now().UTC().Truncate(24 * time.Hour)
	if err := s.EnsurePartitions(b.Context(), day); err != nil {
		b.Fatal(err)
	}
	reader, readerTok := token(b, "reader", config.ScopeQuery)
	loader, loaderTok := token(b, "loader", config.ScopeIngest)
	hh, err := New(s, Options{Tokens: []config.Token{reader, loader}})
	if err != nil {
		b.Fatal(err)
	}
	if code, body, _ := post(b, hh, "/v1/tables/power/readings", loaderTok, "text/csv", strings.NewReader(readingsCSV(day, 96, 0))); code != 200 {
		b.Fatalf("ingest: %d %v", code, body)
	}
	path := "/v1/tables/power/series/20000000008/1-1:1.29.0?from=" + day.Format(time.RFC3339) + "&to=" + day.Add(24*time.Hour).Format(time.RFC3339)
	b.ReportAllocs()
	for b.Loop() {
		r := httptest.NewRequest("GET", path, nil)
		r.Header.Set("Authorization", "Bearer "+readerTok)
		r.Header.Set("Accept", "text/csv")
		w := httptest.NewRecorder()
		hh.ServeHTTP(w, r)
		if w.Code != 200 || strings.Count(w.Body.String(), "\n") != 97 {
			b.Fatalf("series: %d %s", w.Code, w.Body)
		}
	}
}

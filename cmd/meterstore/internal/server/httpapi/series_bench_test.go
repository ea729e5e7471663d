package httpapi

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/meterstore/meterstore/config"
)

// seriesDay returns a handler over a store of one meter's day of quarter
// hours (96 readings), the path of the typed read of that day and the
// text of a token that may read it.
func seriesDay(t testing.TB) (http.Handler, string, string) {
	t.Helper()
	s := openStore(t)
	day := time.Now().UTC().Truncate(24 * time.Hour)
	if err := s.EnsurePartitions(t.Context(), day); err != nil {
		t.Fatal(err)
	}
	reader, readerTok := token(t, "reader", config.ScopeQuery)
	loader, loaderTok := token(t, "loader", config.ScopeIngest)
	hh, err := New(s, Options{Tokens: []config.Token{reader, loader}})
	if err != nil {
		t.Fatal(err)
	}
	if code, body, _ := post(t, hh, "/v1/tables/power/readings", loaderTok, "text/csv", strings.NewReader(readingsCSV(day, 96, 0))); code != 200 {
		t.Fatalf("ingest: %d %v", code, body)
	}
	return hh, "/v1/tables/power/series/20000000008/1-1:1.29.0?from=" + day.Format(time.RFC3339) + "&to=" + day.Add(24*time.Hour).Format(time.RFC3339), readerTok
}

// BenchmarkSeriesRoute asks the typed series route for one meter's day
// (96 readings, CSV) through the whole handler, as the portal workload of
// bench serve does, to show where a request's time and allocations go
// beside the store's one PostgreSQL round trip.
func BenchmarkSeriesRoute(b *testing.B) {
	hh, path, tok := seriesDay(b)
	b.ReportAllocs()
	for b.Loop() {
		r := httptest.NewRequest("GET", path, nil)
		r.Header.Set("Authorization", "Bearer "+tok)
		r.Header.Set("Accept", "text/csv")
		w := httptest.NewRecorder()
		hh.ServeHTTP(w, r)
		if w.Code != 200 || strings.Count(w.Body.String(), "\n") != 97 {
			b.Fatalf("series: %d %s", w.Code, w.Body)
		}
	}
}

// TestSeriesAnswerWrites: a typed series answer, whose rows are all in
// hand before its status, reaches the connection in three writes whatever
// its media (its headers and a first part, the rest, the end of the
// chunked body), not one for the headers and one for each few KB.
func TestSeriesAnswerWrites(t *testing.T) {
	hh, path, tok := seriesDay(t)
	srv := httptest.NewUnstartedServer(hh)
	writes := &countingListener{Listener: srv.Listener}
	srv.Listener = writes
	srv.Start()
	defer srv.Close()
	for _, accept := range []string{"text/csv", "application/x-ndjson", "application/vnd.apache.arrow.stream"} {
		req, err := http.NewRequestWithContext(t.Context(), "GET", srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Accept", accept)
		before := writes.n.Load()
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != 200 || len(body) < 96*100 {
			t.Fatalf("%s: %d, %d bytes, %v", accept, resp.StatusCode, len(body), err)
		}
		if n := writes.n.Load() - before; n > 3 {
			t.Errorf("%s: %d bytes in %d writes, want at most 3", accept, len(body), n)
		}
	}
}

// A countingListener counts the writes to the connections it accepts.
type countingListener struct {
	net.Listener
	n atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, n: &l.n}, nil
}

type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.n.Add(1)
	return c.Conn.Write(p)
}

// BenchmarkSeriesOverTCP asks for one meter's day (CSV) over a real
// keep-alive connection, 8 clients at once as bench serve's portal
// workload, and reports the process's CPU time per answer (server and
// client, not PostgreSQL's): on a loaded machine a steadier measure
// than answers a second.
func BenchmarkSeriesOverTCP(b *testing.B) {
	hh, path, tok := seriesDay(b)
	srv := httptest.NewServer(hh)
	defer srv.Close()
	cl := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}}
	b.SetParallelism(4) // 8 goroutines on 2 cores
	cpu := func() time.Duration {
		var ru syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	b.ReportAllocs()
	b.ResetTimer()
	start := cpu()
	b.RunParallel(func(pb *testing.PB) {
		buf := make([]byte, 32<<10)
		for pb.Next() {
			req, _ := http.NewRequest("GET", srv.URL+path, nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			req.Header.Set("Accept", "text/csv")
			resp, err := cl.Do(req)
			if err != nil {
				b.Error(err)
				return
			}
			n := 0
			for {
				k, err := resp.Body.Read(buf)
				n += bytes.Count(buf[:k], []byte{'\n'})
				if err != nil {
					break
				}
			}
			resp.Body.Close()
			if resp.StatusCode != 200 || n != 97 {
				b.Errorf("series: %d, %d lines", resp.StatusCode, n)
				return
			}
		}
	})
	b.ReportMetric(float64((cpu()-start).Microseconds())/float64(b.N), "cpu-µs/op")
}

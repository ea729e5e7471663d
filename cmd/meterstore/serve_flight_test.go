package main

import (
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// flightPerDay is serve_flight_adbc.py's cross-tier statement, unqualified
// as meterstore query takes it.
const flightPerDay = `SELECT strftime("from", '%Y-%m-%d') AS day, count(*) AS n, sum(value)::VARCHAR AS total
FROM readings GROUP BY ALL ORDER BY day`

// TestServeFlightSQL runs the real binary with server.flight_listen on
// 127.0.0.1 over TLS (a self-signed certificate), a day of power archived
// and a day hot, and has Python's ADBC Flight SQL driver query it
// (testdata/serve_flight_adbc.py): its rows equal meterstore query's.
func TestServeFlightSQL(t *testing.T) {
	if err := exec.Command("python3", "-c", "import adbc_driver_flightsql.dbapi, pyarrow").Run(); err != nil {
		t.Skip("python3 with adbc_driver_flightsql and pyarrow is not installed (.ci/run installs them)")
	}
	dir := t.TempDir()
	bin := buildBinary(t, dir)
	cfgPath, _ := deploymentConfig(t, dir)
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	selfSigned(t, certFile, keyFile)
	tok, section := parseToken(t, mustRun(t, "token", "--name", "reporting", "--scope", "query"))
	text, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	// startTLSServe returns the first address serve prints, the HTTP one:
	// the Flight SQL port is picked here. Another process could take it in
	// between; serve would then fail at its start, naming the key.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	flightAddr := ln.Addr().String()
	ln.Close()
	cfg := withServerKeys(t, string(text), map[string]string{"listen": `"127.0.0.1:0"`, "tls_cert": `"cert.pem"`, "tls_key": `"key.pem"`})
	if !strings.Contains(cfg, `flight_listen = ""`) {
		t.Fatal("the template has no flight_listen")
	}
	cfg = strings.Replace(cfg, `flight_listen = ""`, `flight_listen = "`+flightAddr+`"`, 1) + "\n" + section
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	c := []string{"-c", cfgPath}
	mustRun(t, append([]string{"create"}, c...)...)

	// A day past the settlement lag (45 days), archived, and yesterday,
	// hot.
	today := time.Now().UTC().Truncate(24 * time.Hour)
	for i, day := range []time.Time{today.AddDate(0, 0, -60), today.AddDate(0, 0, -1)} {
		csv := strings.ReplaceAll(deliveryCSV(2, -1), "2026-03-02T", day.AddDate(0, 0, 1).Format("2006-01-02T"))
		csv = strings.ReplaceAll(csv, "2026-03-01T", day.Format("2006-01-02T"))
		path := filepath.Join(dir, "day"+string(rune('0'+i))+".csv")
		if err := os.WriteFile(path, []byte(csv), 0o644); err != nil {
			t.Fatal(err)
		}
		mustRun(t, append([]string{"ingest", "--table", "power", path}, c...)...)
	}
	mustRun(t, append([]string{"archive"}, c...)...)

	p, base := startTLSServe(t, bin, cfgPath)
	out, err := exec.CommandContext(t.Context(), "python3", "testdata/serve_flight_adbc.py",
		"grpc+tls://"+flightAddr, base, tok, certFile).CombinedOutput()
	if err != nil {
		t.Fatalf("serve_flight_adbc.py: %v\n%s\nserve's log:\n%s", err, out, p.stderr.String())
	}
	t.Logf("serve_flight_adbc.py: %s", out)
	var got []map[string]any
	for _, l := range strings.Split(string(out), "\n") {
		if rows, found := strings.CutPrefix(l, "ROWS "); found {
			if err := json.Unmarshal([]byte(rows), &got); err != nil {
				t.Fatal(err)
			}
		}
	}
	var want []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(mustRun(t, append([]string{"query", "--table", "power", "--format", "json", flightPerDay}, c...)...)), "\n") {
		var row map[string]any
		if err := json.Unmarshal([]byte(l), &row); err != nil {
			t.Fatalf("meterstore query: %q: %v", l, err)
		}
		want = append(want, row)
	}
	if len(want) != 2 || !reflect.DeepEqual(got, want) {
		t.Errorf("Flight SQL through ADBC:\n%v\nmeterstore query:\n%v", got, want)
	}

	p.stop(t)
	if log := p.stderr.String(); strings.Contains(log, tok) ||
		!strings.Contains(log, `msg="serving flight sql" address=`+flightAddr+" tls=true") || !strings.Contains(log, "flight sql call refused") {
		t.Errorf("serve's log holds the token, or no Flight SQL over TLS, or no refusal:\n%s", log)
	}
}

// TestServingDocFlight runs docs/serving.md's Python ADBC example as
// printed, against serve's plain gRPC on loopback: only its address and
// the token (a variable the example leaves to the reader) are the test's.
// The count it reads must be the rows ingested.
func TestServingDocFlight(t *testing.T) {
	if err := exec.Command("python3", "-c", "import adbc_driver_flightsql.dbapi, pyarrow").Run(); err != nil {
		const msg = "python3 with adbc_driver_flightsql and pyarrow is required: see .ci/run"
		if os.Getenv("CI") != "" {
			t.Fatal(msg, err)
		}
		t.Skip(msg)
	}
	const docAddr = "grpc://127.0.0.1:8815"
	example := docBlock(t, "../../docs/serving.md", "import adbc_driver_flightsql")
	if !strings.Contains(example, docAddr) {
		t.Fatalf("docs/serving.md's ADBC example does not connect to %s:\n%s", docAddr, example)
	}
	dir := t.TempDir()
	bin := buildBinary(t, dir)
	cfgPath, _ := deploymentConfig(t, dir)
	tok, section := parseToken(t, mustRun(t, "token", "--name", "reporting", "--scope", "query"))
	text, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	flightAddr := ln.Addr().String()
	ln.Close()
	cfg := withServerKeys(t, string(text), map[string]string{"listen": `"127.0.0.1:0"`})
	if !strings.Contains(cfg, `flight_listen = ""`) {
		t.Fatal("the template has no flight_listen")
	}
	cfg = strings.Replace(cfg, `flight_listen = ""`, "flight_listen = "+strconv.Quote(flightAddr), 1)
	if err := os.WriteFile(cfgPath, []byte(cfg+"\n"+section), 0o644); err != nil {
		t.Fatal(err)
	}
	c := []string{"-c", cfgPath}
	mustRun(t, append([]string{"create"}, c...)...)
	day := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -1)
	csv := strings.ReplaceAll(deliveryCSV(2, -1), "2026-03-02T", day.AddDate(0, 0, 1).Format("2006-01-02T"))
	csv = strings.ReplaceAll(csv, "2026-03-01T", day.Format("2006-01-02T"))
	path := filepath.Join(dir, "day.csv")
	if err := os.WriteFile(path, []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, append([]string{"ingest", "--table", "power", path}, c...)...)
	want := mustRun(t, append([]string{"query", "--table", "power", "--format", "csv", "SELECT count(*) AS n FROM readings"}, c...)...)

	p := startServe(t, bin, cfgPath)
	script := "import sys\ntoken = sys.argv[1]\n" +
		strings.Replace(example, docAddr, "grpc://"+flightAddr, 1) +
		"\nprint('COUNT', cur.fetchone()[0])\n"
	out, err := exec.CommandContext(t.Context(), "python3", "-c", script, tok).CombinedOutput()
	if err != nil {
		t.Fatalf("the ADBC example: %v\n%s\nserve's log:\n%s", err, out, p.stderr.String())
	}
	var got string
	for _, l := range strings.Split(string(out), "\n") {
		if c, ok := strings.CutPrefix(l, "COUNT "); ok {
			got = c
		}
	}
	if n := strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(want), "n")); got != n || n == "0" {
		t.Fatalf("the ADBC example counted %q, meterstore query %q", out, want)
	}
}

package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"
)

// flightPerDay is serve_flight_adbc.py's cross-tier statement, unqualified
// as meterstore query takes it.
const flightPerDay = `SELECT strftime("from", '%Y-%m-%d') AS day, count(*) AS n, sum(value)::VARCHAR AS total
FROM readings GROUP BY ALL ORDER BY day`

// TestServeFlightSQL runs the real binary with server.flight_listen on
// 127.0.0.1, a day of power archived and a day hot, and has Python's ADBC
// Flight SQL driver query it (testdata/serve_flight_adbc.py): its rows
// equal meterstore query's.
func TestServeFlightSQL(t *testing.T) {
	if err := exec.Command("python3", "-c", "import adbc_driver_flightsql.dbapi, pyarrow").Run(); err != nil {
		t.Skip("python3 with adbc_driver_flightsql and pyarrow is not installed (.ci/run installs them)")
	}
	dir := t.TempDir()
	bin := buildBinary(t, dir)
	cfgPath, _ := deploymentConfig(t, dir)
	tok, section := parseToken(t, mustRun(t, "token", "--name", "reporting", "--scope", "query"))
	text, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg := strings.Replace(string(text), `listen = "127.0.0.1:8080"`, `listen = "127.0.0.1:0"`, 1)
	cfg = strings.Replace(cfg, `flight_listen = ""`, `flight_listen = "127.0.0.1:0"`, 1) + "\n" + section
	if !strings.Contains(cfg, `flight_listen = "127.0.0.1:0"`) {
		t.Fatal("the template has no flight_listen")
	}
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

	cmd := exec.Command(bin, "serve", "-c", cfgPath)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var waitErr error
	exited := make(chan struct{})
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		waitErr = cmd.Wait()
		close(exited)
	}()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			cmd.Process.Kill()
			<-exited
		}
	})
	var base, uri string
	deadline := time.After(2 * time.Minute)
	for base == "" || uri == "" {
		select {
		case l, ok := <-lines:
			if !ok {
				<-exited
				t.Fatalf("serve exited before serving: %v\n%s", waitErr, stderr.String())
			}
			if addr, found := strings.CutPrefix(l, "serving flight sql "); found {
				uri = addr
			} else if addr, found := strings.CutPrefix(l, "serving "); found {
				base = addr
			}
		case <-deadline:
			t.Fatalf("serve did not say where it serves within 2 minutes\n%s", stderr.String())
		}
	}
	if !strings.HasPrefix(uri, "grpc://127.0.0.1:") || strings.HasSuffix(uri, ":0") {
		t.Fatalf("serving flight sql %q", uri)
	}

	out, err := exec.CommandContext(t.Context(), "python3", "testdata/serve_flight_adbc.py", uri, base, tok).CombinedOutput()
	if err != nil {
		t.Fatalf("serve_flight_adbc.py: %v\n%s\nserve's log:\n%s", err, out, stderr.String())
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

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
		var ee *exec.ExitError
		if errors.As(waitErr, &ee) {
			t.Fatalf("after SIGTERM: exit %d\n%s", ee.ExitCode(), stderr.String())
		} else if waitErr != nil {
			t.Fatal(waitErr)
		}
	case <-time.After(time.Minute):
		t.Fatalf("serve did not exit within a minute of SIGTERM\n%s", stderr.String())
	}
	if log := stderr.String(); strings.Contains(log, tok) || !strings.Contains(log, "flight sql call refused") {
		t.Errorf("serve's log holds the token, or no refusal:\n%s", log)
	}
}

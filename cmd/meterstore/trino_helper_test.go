package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"
)

// trinoInstall is where .ci/trino.sh installed Trino 476: MS_TRINO_HOME,
// MS_TRINO_CLI and MS_TRINO_JAVA_HOME, or the places it uses by default.
type trinoInstall struct {
	home, cli, javaHome string
}

// findTrino returns the installation, or an error naming what is missing.
func findTrino() (trinoInstall, error) {
	home, _ := os.UserHomeDir()
	dir := filepath.Join(home, ".cache", "meterstore-ci", "trino-476")
	in := trinoInstall{home: filepath.Join(dir, "server"), cli: filepath.Join(dir, "trino-cli-476-executable.jar"),
		javaHome: "/usr/lib/jvm/temurin-25-jdk-amd64"}
	for env, v := range map[string]*string{"MS_TRINO_HOME": &in.home, "MS_TRINO_CLI": &in.cli, "MS_TRINO_JAVA_HOME": &in.javaHome} {
		if s := os.Getenv(env); s != "" {
			*v = s
		}
	}
	for _, p := range []string{filepath.Join(in.home, "lib"), filepath.Join(in.home, "plugin", "iceberg"), in.cli, filepath.Join(in.javaHome, "bin", "java")} {
		if _, err := os.Stat(p); err != nil {
			return in, err
		}
	}
	return in, nil
}

// trinoServer is a single-node Trino (a coordinator that also runs the
// tasks) started by a test, on a free port of 127.0.0.1.
type trinoServer struct {
	in      trinoInstall
	base    string // http://127.0.0.1:<port>
	logPath string
	cmd     *exec.Cmd
	exited  chan struct{}
	waitErr error
}

// startTrino starts Trino in dir with the catalogs (name → properties),
// the Iceberg connector its only plugin (Trino loads every plugin it finds
// on start, which takes long on two cores), a 2 GB heap, and waits, for
// at most 3 minutes, until it accepts queries. It is killed when the test
// ends.
func startTrino(t *testing.T, in trinoInstall, dir string, catalogs map[string]map[string]string) *trinoServer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	for _, d := range []string{"etc/catalog", "plugin", "data"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(in.home, "plugin", "iceberg"), filepath.Join(dir, "plugin", "iceberg")); err != nil {
		t.Fatal(err)
	}
	writeProperties(t, filepath.Join(dir, "etc", "config.properties"), map[string]string{
		"coordinator":                        "true",
		"node-scheduler.include-coordinator": "true",
		"http-server.http.port":              fmt.Sprint(port),
		"discovery.uri":                      fmt.Sprintf("http://127.0.0.1:%d", port),
		"node.environment":                   "meterstore_test",
		"node.id":                            "meterstore-test",
		"node.bind-ip":                       "127.0.0.1",
		"node.internal-address":              "127.0.0.1",
		"plugin.dir":                         filepath.Join(dir, "plugin"),
		"catalog.config-dir":                 filepath.Join(dir, "etc", "catalog"),
		"query.max-memory":                   "1GB",
		"query.max-memory-per-node":          "1GB",
	})
	for name, props := range catalogs {
		writeProperties(t, filepath.Join(dir, "etc", "catalog", name+".properties"), props)
	}
	s := &trinoServer{in: in, base: fmt.Sprintf("http://127.0.0.1:%d", port), logPath: filepath.Join(dir, "trino.log"), exited: make(chan struct{})}
	logFile, err := os.Create(s.logPath)
	if err != nil {
		t.Fatal(err)
	}
	// Trino's recommended JVM settings, with a small heap.
	s.cmd = exec.Command(filepath.Join(in.javaHome, "bin", "java"),
		"-Xmx2G", "-XX:+UseG1GC", "-XX:+ExitOnOutOfMemoryError", "-XX:-OmitStackTraceInFastThrow",
		"-XX:+EnableDynamicAgentLoading", "--enable-native-access=ALL-UNNAMED",
		"-Djdk.attach.allowAttachSelf=true", "-Dfile.encoding=UTF-8",
		"-Dconfig="+filepath.Join(dir, "etc", "config.properties"),
		"-cp", filepath.Join(in.home, "lib", "*"), "io.trino.server.TrinoServer")
	s.cmd.Dir = filepath.Join(dir, "data")
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		s.waitErr = s.cmd.Wait()
		logFile.Close()
		close(s.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-s.exited:
		default:
			s.cmd.Process.Kill()
			<-s.exited
		}
	})

	start := time.Now()
	deadline := start.Add(3 * time.Minute)
	for {
		if s.started() {
			t.Logf("trino: started in %s", time.Since(start).Round(time.Second))
			return s
		}
		select {
		case <-s.exited:
			t.Fatalf("trino exited before it started: %v\n%s", s.waitErr, s.logTail())
		case <-time.After(time.Second):
		}
		if time.Now().After(deadline) {
			t.Fatalf("trino did not start within 3 minutes\n%s", s.logTail())
		}
	}
}

// writeProperties writes a Java properties file of props, sorted.
func writeProperties(t *testing.T, path string, props map[string]string) {
	t.Helper()
	var lines []string
	for k, v := range props {
		lines = append(lines, k+"="+v)
	}
	sort.Strings(lines)
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
}

// started reports whether Trino's /v1/info says it has finished starting.
func (s *trinoServer) started() bool {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(s.base + "/v1/info")
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var info struct {
		Starting bool `json:"starting"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&info) != nil || info.Starting {
		return false
	}
	// A coordinator that has started may not yet list itself as a worker:
	// a query then fails with NO_NODES_AVAILABLE.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := s.query(ctx, "system", "runtime", "SELECT count(*) FROM nodes WHERE state = 'active'")
	return err == nil && len(res.rows) == 1 && fmt.Sprint(res.rows[0][0]) != "0"
}

// logTail returns the last 150 lines of Trino's log.
func (s *trinoServer) logTail() string {
	data, _ := os.ReadFile(s.logPath)
	lines := strings.Split(string(data), "\n")
	return strings.Join(lines[max(0, len(lines)-150):], "\n")
}

// trinoResult is the answer to a statement: its rows, each value as the
// statement protocol gives it (a number as json.Number, a decimal, date
// or timestamp as a string), and the time Trino says it took.
type trinoResult struct {
	rows    [][]any
	elapsed time.Duration
}

// errTrinoQuery is an error Trino answered for a statement.
var errTrinoQuery = errors.New("trino query failed")

// query runs sql through Trino's statement protocol (POST /v1/statement,
// then GET nextUri until there is none) in the catalog and schema given,
// with the session time zone UTC, bounded by ctx and by 10,000 requests.
func (s *trinoServer) query(ctx context.Context, catalog, schema, sql string) (trinoResult, error) {
	var res trinoResult
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.base+"/v1/statement", strings.NewReader(sql))
	if err != nil {
		return res, err
	}
	req.Header.Set("X-Trino-User", "meterstore-test")
	req.Header.Set("X-Trino-Catalog", catalog)
	req.Header.Set("X-Trino-Schema", schema)
	req.Header.Set("X-Trino-Time-Zone", "UTC")
	for range 10_000 {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return res, fmt.Errorf("trino: %w", err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return res, fmt.Errorf("trino: %w", err)
		}
		if resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusTooManyRequests {
			// The protocol asks the client to retry these.
			select {
			case <-ctx.Done():
				return res, ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		if resp.StatusCode != http.StatusOK {
			return res, fmt.Errorf("trino: %s: %s", resp.Status, body)
		}
		var page struct {
			NextURI string  `json:"nextUri"`
			Data    [][]any `json:"data"`
			Stats   struct {
				ElapsedTimeMillis int64 `json:"elapsedTimeMillis"`
			} `json:"stats"`
			Error *struct {
				Message   string `json:"message"`
				ErrorName string `json:"errorName"`
			} `json:"error"`
		}
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		if err := dec.Decode(&page); err != nil {
			return res, fmt.Errorf("trino: decode: %w", err)
		}
		res.rows = append(res.rows, page.Data...)
		res.elapsed = time.Duration(page.Stats.ElapsedTimeMillis) * time.Millisecond
		if page.Error != nil {
			return res, fmt.Errorf("%w: %s: %s", errTrinoQuery, page.Error.ErrorName, page.Error.Message)
		}
		if page.NextURI == "" {
			return res, nil
		}
		if req, err = http.NewRequestWithContext(ctx, http.MethodGet, page.NextURI, nil); err != nil {
			return res, err
		}
		req.Header.Set("X-Trino-User", "meterstore-test")
	}
	return res, fmt.Errorf("trino: no answer to %q after 10,000 requests", sql)
}

// mustQuery runs sql as query does, in catalog trinoCatalog and schema
// meterstore, within limit, and fails t with the server's log tail if
// Trino refuses it.
func (s *trinoServer) mustQuery(t *testing.T, limit time.Duration, sql string) trinoResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), limit)
	defer cancel()
	res, err := s.query(ctx, trinoCatalog, "meterstore", sql)
	// A coordinator that lists itself as an active node may still lack the
	// catalog's node assignment for a few seconds after start (seen under
	// load in CI): the statement then fails before it reads anything, as
	// NO_NODES_AVAILABLE or as GENERIC_INTERNAL_ERROR "No nodes available",
	// and is sent again until the limit.
	for err != nil && noNodes(err) && ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
			res, err = s.query(ctx, trinoCatalog, "meterstore", sql)
		}
	}
	if err != nil {
		t.Fatalf("trino: %s: %v\n%s", sql, err, s.logTail())
	}
	return res
}

// noNodes reports whether Trino refused a statement for want of a node.
func noNodes(err error) bool {
	msg := err.Error()
	return strings.Contains(msg, "NO_NODES_AVAILABLE") || strings.Contains(strings.ToLower(msg), "no nodes available")
}

// cli runs sql with Trino's command-line client (CSV output, as a user
// would) and returns its standard output.
func (s *trinoServer) cli(ctx context.Context, catalog, schema, sql string) (string, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(s.in.javaHome, "bin", "java"), "--enable-native-access=ALL-UNNAMED",
		"-jar", s.in.cli, "--server", s.base, "--user", "meterstore-test", "--catalog", catalog, "--schema", schema,
		"--timezone", "UTC", "--output-format", "CSV", "--execute", sql)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("trino-cli: %w\n%s", err, stderr.String())
	}
	return stdout.String(), nil
}

// stop ends Trino (SIGKILL: nothing of it is kept) and waits for it.
func (s *trinoServer) stop(t *testing.T) {
	t.Helper()
	select {
	case <-s.exited:
		t.Errorf("trino exited before the test ended: %v\n%s", s.waitErr, s.logTail())
		return
	default:
	}
	s.cmd.Process.Kill()
	<-s.exited
}

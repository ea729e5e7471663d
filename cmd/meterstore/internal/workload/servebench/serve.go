package servebench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/meterstore/meterstore/config"
)

// The tables of a run: the in-process baseline writes into one, the HTTP
// clients into the other, so that each starts fresh.
const (
	inProcTable = "bench_write"
	httpTable   = "bench_http"
)

// deployment is the configuration a run writes for the serve it starts
// and for its own in-process store.
type deployment struct {
	path  string // the TOML file
	token string // a bearer token with scopes ingest and query
}

// writeDeployment writes, in dir, the configuration of a deployment on
// the PostgreSQL server at pgURL: its own schema, a warehouse in dir, a
// listener on a free port of 127.0.0.1, one token, and the two tables.
func writeDeployment(dir, pgURL, schema string, maxRows int) (*deployment, error) {
	tok, hash, err := config.NewToken()
	if err != nil {
		return nil, err
	}
	text := fmt.Sprintf(`[postgres]
url = %q
schema = %q
data_dir = %q

[warehouse]
url = %q

[query]
max_rows = %d

[server]
listen = "127.0.0.1:0"
flight_listen = "127.0.0.1:0"
pg_listen = "127.0.0.1:0"

[[server.token]]
name = "bench"
hash = %q
scopes = ["ingest", "query"]
`, pgURL, schema, dir, "file://"+filepath.Join(dir, "warehouse"), maxRows, hash)
	for _, name := range []string{inProcTable, httpTable} {
		text += fmt.Sprintf(`
[[table]]
name = %q
time_model = "interval"
commodity = "STROM"
resolutions = ["PT15M"]
width = "daily"
`, name)
	}
	// Refuse here what serve would refuse later, with the reason.
	if _, err := config.Parse([]byte(text), dir, nil); err != nil {
		return nil, fmt.Errorf("servebench: the generated configuration: %w", err)
	}
	path := filepath.Join(dir, "meterstore.toml")
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		return nil, err
	}
	return &deployment{path: path, token: tok}, nil
}

// server is a running meterstore serve, a child process.
type server struct {
	cmd  *exec.Cmd
	base string // http://127.0.0.1:port
	// others are the other addresses it says it serves: "flight sql"
	// and "postgres", each host:port, once said.
	others chan [2]string
	logs   string // the file its stderr goes to
	exited chan struct{}
	err    error // of Wait, once exited is closed
}

// startServer runs bin serve on the configuration at cfgPath and waits,
// at most timeout, until it says where it listens.
func startServer(ctx context.Context, bin, cfgPath string, timeout time.Duration) (*server, error) {
	logs := filepath.Join(filepath.Dir(cfgPath), "serve.log")
	logFile, err := os.Create(logs)
	if err != nil {
		return nil, err
	}
	defer logFile.Close() // the child holds its own descriptor
	// Not CommandContext: the run stops the server with SIGTERM, to
	// measure a clean shutdown, rather than have it killed.
	cmd := exec.Command(bin, "serve", "-c", cfgPath)
	cmd.Stderr = logFile
	// Its own process group, so that a Ctrl-C meant for the bench reaches
	// serve only as the bench's SIGTERM; and a SIGTERM should the bench
	// die without sending one.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("servebench: start %s serve: %w", bin, err)
	}
	s := &server{cmd: cmd, logs: logs, exited: make(chan struct{}), others: make(chan [2]string, 2)}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			a, ok := strings.CutPrefix(sc.Text(), "serving ")
			switch {
			case !ok:
			case strings.HasPrefix(a, "flight sql grpc://"):
				s.others <- [2]string{"flight sql", strings.TrimPrefix(a, "flight sql grpc://")}
			case strings.HasPrefix(a, "postgres postgres://"):
				s.others <- [2]string{"postgres", strings.TrimPrefix(a, "postgres postgres://")}
			default:
				select {
				case addr <- a:
				default:
				}
			}
		}
		io.Copy(io.Discard, stdout)
		s.err = cmd.Wait()
		close(s.exited)
	}()
	wait := time.NewTimer(timeout)
	defer wait.Stop()
	select {
	case s.base = <-addr:
		if !strings.HasPrefix(s.base, "http://127.0.0.1:") {
			s.kill()
			return nil, fmt.Errorf("servebench: serve listens on %q, not plain HTTP on 127.0.0.1", s.base)
		}
		return s, nil
	case <-s.exited:
		return nil, fmt.Errorf("servebench: serve exited before serving: %v\n%s", s.err, s.tail())
	case <-wait.C:
		err = fmt.Errorf("servebench: serve did not say where it listens within %v\n%s", timeout, s.tail())
	case <-ctx.Done():
		err = ctx.Err()
	}
	s.kill()
	return nil, err
}

// stop sends SIGTERM and waits for the exit, at most timeout, then kills.
func (s *server) stop(timeout time.Duration) error {
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	select {
	case <-s.exited:
		if s.err != nil {
			return fmt.Errorf("servebench: serve exited after SIGTERM: %w\n%s", s.err, s.tail())
		}
		return nil
	case <-time.After(timeout):
		s.kill()
		return fmt.Errorf("servebench: serve did not exit within %v of SIGTERM; killed", timeout)
	}
}

// kill ends the server at once, if it still runs.
func (s *server) kill() {
	s.cmd.Process.Kill()
	<-s.exited
}

// tail returns the end of the server's log, for an error message.
func (s *server) tail() string {
	b, _ := os.ReadFile(s.logs)
	const keep = 4000
	if len(b) > keep {
		b = b[len(b)-keep:]
	}
	return string(b)
}

// peakRSS returns the server's peak resident set size in bytes so far
// (VmHWM), or since the last resetPeak.
func (s *server) peakRSS() (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return 0, fmt.Errorf("servebench: peak RSS of serve: %w", err)
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("servebench: VmHWM %q: %w", v, err)
			}
			return kb << 10, nil
		}
	}
	return 0, errors.New("servebench: no VmHWM in /proc/<pid>/status")
}

// resetPeak sets the server's VmHWM to its current RSS (writing 5 to
// clear_refs, Linux 4.0 and later), so that the next peakRSS is the
// phase's own; false if the kernel refused, when peaks are cumulative.
func (s *server) resetPeak() bool {
	err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", s.cmd.Process.Pid), []byte("5"), 0)
	return err == nil
}

package archivebench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/meterstore/meterstore/internal/archive"
)

// WindowSpec describes one throughput measurement: a window of about
// Readings readings, one Berlin day of as many meters as that takes, loaded
// into the hot tier and archived by one cycle.
type WindowSpec struct {
	Readings int `json:"target_readings"`
	// Fixture is the day loaded; Fixture.Meters is derived from Readings
	// and Fixture.Days is 1.
	Fixture Fixture `json:"fixture"`
	// Schema is the PostgreSQL schema of the measurement; it is dropped and
	// recreated.
	Schema string `json:"schema"`
	// ChunkRows is the archiver's chunk size; zero means its default.
	ChunkRows int `json:"chunk_rows,omitempty"`
}

// meters returns the meters whose day holds about n readings, corrections
// included, on an ordinary day of 96 quarter hours.
func meters(n int, correctionRate float64) int {
	return max(1, int(math.Round(float64(n)/(96*(1+correctionRate)))))
}

// WindowResult is what one throughput measurement found.
type WindowResult struct {
	Spec     WindowSpec `json:"spec"`
	Readings int64      `json:"readings"` // archived in the window
	LoadSecs float64    `json:"load_seconds"`
	// Seconds is the duration of the archival cycle: lease, detach, stream
	// into Parquet, commit, count check and drop of the partitions.
	Seconds        float64 `json:"archive_seconds"`
	ReadingsPerSec float64 `json:"archive_readings_per_sec"`
	// RSSBefore is the resident set right before the cycle, after a
	// collection that returned freed memory to the OS; PeakRSS is the
	// largest VmRSS sampled every 50 ms during the cycle.
	RSSBefore uint64 `json:"rss_before_bytes"`
	PeakRSS   uint64 `json:"peak_rss_bytes"`
	// PeakHeap is the largest live-and-unswept heap object bytes sampled
	// with runtime/metrics during the cycle.
	PeakHeap uint64 `json:"peak_heap_bytes"`
	Samples  int    `json:"samples"`
	// Process is "child" when the window ran in a process of its own.
	Process string `json:"process"`
}

// RunWindow loads and archives one window on the server at url, in this
// process, and measures the cycle.
func RunWindow(ctx context.Context, url string, s WindowSpec, log *slog.Logger, progress io.Writer) (*WindowResult, error) {
	f := s.Fixture
	f.Days = 1
	f.Meters = meters(s.Readings, f.CorrectionRate)
	s.Fixture = f
	if err := f.validate(); err != nil {
		return nil, err
	}
	e, err := openEnv(ctx, url, s.Schema, "", log)
	if err != nil {
		return nil, err
	}
	defer e.close()
	res := &WindowResult{Spec: s, Process: "in-process"}
	start := time.Now()
	loaded, err := e.load(ctx, f, progress)
	if err != nil {
		return nil, err
	}
	res.LoadSecs = time.Since(start).Seconds()

	// The Berlin day spans two UTC partitions; a two-day step makes them
	// one window, due two days after it ends.
	from, to := e.span(f)
	step := to.Sub(from)
	a, err := e.archiver(archive.Config{
		SettlementLag:      step,
		Step:               step,
		MaxWindowsPerCycle: 1,
		ChunkRows:          s.ChunkRows,
	})
	if err != nil {
		return nil, err
	}
	now := to.Add(step + time.Hour)

	// The load's garbage is not the archival's: collect it and give the
	// memory back before measuring.
	runtime.GC()
	debug.FreeOSMemory()
	res.RSSBefore = rss()
	stop := sampleMemory(50 * time.Millisecond)
	start = time.Now()
	out, err := a.Cycle(ctx, e.table, e.ctable, now)
	res.Seconds = time.Since(start).Seconds()
	res.PeakRSS, res.PeakHeap, res.Samples = stop()
	if err != nil {
		return nil, fmt.Errorf("archivebench: archive: %w", err)
	}
	if !out.Healthy() || len(out.Windows) != 1 {
		return nil, fmt.Errorf("archivebench: archive: cycle %s with %d windows: %v", out.Status, len(out.Windows), out.Violations)
	}
	res.Readings = out.Windows[0].Rows
	if res.Readings != loaded {
		return nil, fmt.Errorf("archivebench: archived %d readings of the %d loaded", res.Readings, loaded)
	}
	res.ReadingsPerSec = float64(res.Readings) / res.Seconds
	return res, nil
}

// sampleMemory samples the resident set and the heap every interval until
// the returned function is called, which returns the largest samples and
// their number.
func sampleMemory(interval time.Duration) (stop func() (peakRSS, peakHeap uint64, n int)) {
	var (
		wg   sync.WaitGroup
		done = make(chan struct{})
		rssP uint64
		heap uint64
		cnt  int
	)
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			rssP = max(rssP, rss())
			metrics.Read(sample)
			if sample[0].Value.Kind() == metrics.KindUint64 {
				heap = max(heap, sample[0].Value.Uint64())
			}
			cnt++
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() (uint64, uint64, int) {
		close(done)
		wg.Wait()
		return rssP, heap, cnt
	}
}

// rss returns the process's resident set size from /proc/self/status, or
// zero where there is none.
func rss() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:")
		if !ok {
			continue
		}
		kb, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
		if err != nil {
			return 0
		}
		return kb << 10
	}
	return 0
}

// A Spawner runs one window measurement against the server at url,
// typically in a fresh process.
type Spawner func(ctx context.Context, url string, s WindowSpec) (*WindowResult, error)

// childRequest is what a parent sends a child on its standard input.
type childRequest struct {
	URL  string     `json:"url"`
	Spec WindowSpec `json:"spec"`
}

// Reexec returns a Spawner that runs exe with args, a command that calls
// ServeChild, once per window: the request goes to its standard input, the
// result comes from its standard output, its standard error is passed to
// stderr.
func Reexec(exe string, args []string, stderr io.Writer) Spawner {
	return func(ctx context.Context, url string, s WindowSpec) (*WindowResult, error) {
		req, err := json.Marshal(childRequest{URL: url, Spec: s})
		if err != nil {
			return nil, fmt.Errorf("archivebench: %w", err)
		}
		cmd := exec.CommandContext(ctx, exe, args...)
		cmd.Stdin = bytes.NewReader(req)
		cmd.Stderr = stderr
		var out bytes.Buffer
		cmd.Stdout = &out
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("archivebench: window of %d readings in a child process: %w", s.Readings, err)
		}
		var res WindowResult
		if err := json.Unmarshal(out.Bytes(), &res); err != nil {
			return nil, fmt.Errorf("archivebench: result of the child process: %w", err)
		}
		return &res, nil
	}
}

// ServeChild is the child side of Reexec: it reads a request from r, runs
// the window and writes the result to w as JSON. Progress goes to progress.
func ServeChild(ctx context.Context, r io.Reader, w io.Writer, log *slog.Logger, progress io.Writer) error {
	var req childRequest
	if err := json.NewDecoder(r).Decode(&req); err != nil {
		return fmt.Errorf("archivebench: child request: %w", err)
	}
	res, err := RunWindow(ctx, req.URL, req.Spec, log, progress)
	if err != nil {
		return err
	}
	res.Process = "child"
	return json.NewEncoder(w).Encode(res)
}

// ThroughputConfig configures a throughput run.
type ThroughputConfig struct {
	// Windows are the window sizes in readings.
	Windows []int
	// Fixture gives the day loaded (Start), CorrectionRate, MetersPerBatch
	// and Seed; Meters and Days follow from each window's size.
	Fixture   Fixture
	ChunkRows int
	// Spawn runs each window; nil runs them in this process, one after the
	// other, with a collection that returns freed memory to the OS between.
	Spawn    Spawner
	Progress io.Writer
	Logger   *slog.Logger
}

// ThroughputResult is the windows a throughput run measured.
type ThroughputResult struct {
	GOMAXPROCS int             `json:"gomaxprocs"`
	Windows    []*WindowResult `json:"windows"`
}

// RunThroughput measures each window size in turn.
func RunThroughput(ctx context.Context, url string, c ThroughputConfig) (*ThroughputResult, error) {
	res := &ThroughputResult{GOMAXPROCS: runtime.GOMAXPROCS(0)}
	for _, n := range c.Windows {
		if n < 1 {
			return nil, fmt.Errorf("archivebench: window of %d readings", n)
		}
		s := WindowSpec{Readings: n, Fixture: c.Fixture, Schema: fmt.Sprintf("meterstore_archivebench_w%d", n), ChunkRows: c.ChunkRows}
		if c.Progress != nil {
			fmt.Fprintf(c.Progress, "window of ~%d readings (%d meters, one day)\n", n, meters(n, c.Fixture.CorrectionRate))
		}
		var (
			w   *WindowResult
			err error
		)
		if c.Spawn != nil {
			w, err = c.Spawn(ctx, url, s)
		} else {
			w, err = RunWindow(ctx, url, s, c.Logger, c.Progress)
			runtime.GC()
			debug.FreeOSMemory()
		}
		if err != nil {
			return nil, err
		}
		res.Windows = append(res.Windows, w)
	}
	return res, nil
}

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
	"runtime/pprof"
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
	// with runtime/metrics during the cycle; PeakLiveHeap the largest heap
	// that the latest collection found live, which garbage not yet
	// collected does not inflate.
	PeakHeap     uint64 `json:"peak_heap_bytes"`
	PeakLiveHeap uint64 `json:"peak_live_heap_bytes"`
	Samples      int    `json:"samples"`
	// Process is "child" when the window ran in a process of its own.
	Process string `json:"process"`
}

// A WindowRequest is one window to archive: loaded into schema Spec.Schema
// on the server at URL, with its warehouse in Dir.
type WindowRequest struct {
	URL    string     `json:"url"`
	Spec   WindowSpec `json:"spec"`
	Dir    string     `json:"dir"`
	Loaded int64      `json:"loaded"` // readings the load wrote
	// HeapProfile, if set, is where the archival writes a heap profile at
	// each new peak of its live heap.
	HeapProfile string `json:"heap_profile,omitempty"`
	// CPUProfile, if set, is where the archival writes the CPU profile of
	// its cycle.
	CPUProfile string `json:"cpu_profile,omitempty"`
}

// LoadWindow creates the window's schema and warehouse in dir and loads its
// readings into the hot tier. It returns the request that archives them
// and the seconds the load took.
func LoadWindow(ctx context.Context, url string, s WindowSpec, dir string, log *slog.Logger, progress io.Writer) (WindowRequest, float64, error) {
	f := s.Fixture
	f.Days = 1
	f.Meters = meters(s.Readings, f.CorrectionRate)
	s.Fixture = f
	if err := f.validate(); err != nil {
		return WindowRequest{}, 0, err
	}
	e, err := openEnv(ctx, url, s.Schema, dir, true, log)
	if err != nil {
		return WindowRequest{}, 0, err
	}
	defer e.close()
	start := time.Now()
	loaded, err := e.load(ctx, f, progress)
	if err != nil {
		return WindowRequest{}, 0, err
	}
	return WindowRequest{URL: url, Spec: s, Dir: dir, Loaded: loaded}, time.Since(start).Seconds(), nil
}

// ArchiveWindow archives a loaded window with one cycle and measures it.
// Run in a process of its own, its figures are the archival's alone: the
// load's garbage and heap growth are another process's.
func ArchiveWindow(ctx context.Context, req WindowRequest, log *slog.Logger) (*WindowResult, error) {
	s := req.Spec
	e, err := openEnv(ctx, req.URL, s.Schema, req.Dir, false, log)
	if err != nil {
		return nil, err
	}
	defer e.close()
	res := &WindowResult{Spec: s, Process: "in-process"}
	// The Berlin day spans two UTC partitions; a two-day step makes them
	// one window, due two days after it ends.
	from, to := e.span(s.Fixture)
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
	runtime.GC()
	debug.FreeOSMemory()
	res.RSSBefore = rss()
	stop := sampleMemory(50*time.Millisecond, req.HeapProfile)
	stopCPU, err := startCPUProfile(req.CPUProfile)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	out, err := a.Cycle(ctx, e.table, e.ctable, now)
	res.Seconds = time.Since(start).Seconds()
	stopCPU()
	res.PeakRSS, res.PeakHeap, res.PeakLiveHeap, res.Samples = stop()
	if err != nil {
		return nil, fmt.Errorf("archivebench: archive: %w", err)
	}
	if !out.Healthy() || len(out.Windows) != 1 {
		return nil, fmt.Errorf("archivebench: archive: cycle %s with %d windows: %v", out.Status, len(out.Windows), out.Violations)
	}
	res.Readings = out.Windows[0].Rows
	if res.Readings != req.Loaded {
		return nil, fmt.Errorf("archivebench: archived %d readings of the %d loaded", res.Readings, req.Loaded)
	}
	res.ReadingsPerSec = float64(res.Readings) / res.Seconds
	return res, nil
}

// sampleMemory samples the resident set and the heap every interval until
// the returned function is called, which returns the largest samples and
// their number. If profile is set, a heap profile is written there at each
// new peak of the live heap, so the last one shows what the peak held.
func sampleMemory(interval time.Duration, profile string) (stop func() (peakRSS, peakHeap, peakLive uint64, n int)) {
	var (
		wg   sync.WaitGroup
		done = make(chan struct{})
		rssP uint64
		heap uint64
		live uint64
		cnt  int
	)
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/gc/heap/live:bytes"}}
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
			if sample[1].Value.Kind() == metrics.KindUint64 {
				if v := sample[1].Value.Uint64(); v > live {
					live = v
					if profile != "" {
						writeHeapProfile(profile)
					}
				}
			}
			cnt++
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	return func() (uint64, uint64, uint64, int) {
		close(done)
		wg.Wait()
		return rssP, heap, live, cnt
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

// A Spawner archives one loaded window, typically in a fresh process.
type Spawner func(ctx context.Context, req WindowRequest) (*WindowResult, error)

// Reexec returns a Spawner that runs exe with args, a command that calls
// ServeChild, once per window: the request goes to its standard input, the
// result comes from its standard output, its standard error is passed to
// stderr.
func Reexec(exe string, args []string, stderr io.Writer) Spawner {
	return func(ctx context.Context, req WindowRequest) (*WindowResult, error) {
		in, err := json.Marshal(req)
		if err != nil {
			return nil, fmt.Errorf("archivebench: %w", err)
		}
		cmd := exec.CommandContext(ctx, exe, args...)
		cmd.Stdin = bytes.NewReader(in)
		cmd.Stderr = stderr
		var out bytes.Buffer
		cmd.Stdout = &out
		if err := cmd.Run(); err != nil {
			return nil, fmt.Errorf("archivebench: window of %d readings in a child process: %w", req.Spec.Readings, err)
		}
		var res WindowResult
		if err := json.Unmarshal(out.Bytes(), &res); err != nil {
			return nil, fmt.Errorf("archivebench: result of the child process: %w", err)
		}
		return &res, nil
	}
}

// ServeChild is the child side of Reexec: it reads a request from r,
// archives the window and writes the result to w as JSON.
func ServeChild(ctx context.Context, r io.Reader, w io.Writer, log *slog.Logger) error {
	var req WindowRequest
	if err := json.NewDecoder(r).Decode(&req); err != nil {
		return fmt.Errorf("archivebench: child request: %w", err)
	}
	res, err := ArchiveWindow(ctx, req, log)
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
	// HeapProfile, if set, names the heap profile of each window's
	// archival at its live heap's peak; the window size is appended.
	HeapProfile string
	// CPUProfile, if set, names the CPU profile of each window's archival
	// cycle; the window size is appended.
	CPUProfile string
	// Spawn archives each window once this process has loaded it; nil
	// archives in this process, after a collection that returns freed
	// memory to the OS.
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
		w, err := runWindow(ctx, url, s, c)
		if err != nil {
			return nil, err
		}
		res.Windows = append(res.Windows, w)
	}
	return res, nil
}

// runWindow loads a window here and archives it where c says, in a
// warehouse removed afterwards.
func runWindow(ctx context.Context, url string, s WindowSpec, c ThroughputConfig) (*WindowResult, error) {
	dir, err := os.MkdirTemp("", "meterstore-archivebench-")
	if err != nil {
		return nil, fmt.Errorf("archivebench: %w", err)
	}
	defer os.RemoveAll(dir)
	req, loadSecs, err := LoadWindow(ctx, url, s, dir, c.Logger, c.Progress)
	if err != nil {
		return nil, err
	}
	if c.HeapProfile != "" {
		req.HeapProfile = fmt.Sprintf("%s.%d", c.HeapProfile, s.Readings)
	}
	if c.CPUProfile != "" {
		req.CPUProfile = fmt.Sprintf("%s.%d", c.CPUProfile, s.Readings)
	}
	var w *WindowResult
	if c.Spawn != nil {
		w, err = c.Spawn(ctx, req)
	} else {
		w, err = ArchiveWindow(ctx, req, c.Logger)
	}
	if err != nil {
		return nil, err
	}
	w.LoadSecs = loadSecs
	return w, nil
}

func writeHeapProfile(path string) {
	f, err := os.Create(path)
	if err != nil {
		return
	}
	defer f.Close()
	pprof.WriteHeapProfile(f)
}

// startCPUProfile profiles the CPU into path until the returned function
// is called; an empty path profiles nothing.
func startCPUProfile(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("archivebench: cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("archivebench: cpu profile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

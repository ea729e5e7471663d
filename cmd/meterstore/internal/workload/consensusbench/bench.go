// Package consensusbench measures the PostgreSQL consensus log under both
// isolation levels in one run: a closed-loop peak, then an open-loop ramp of
// fixed offered rates past saturation and back down, sampling the SIRead
// lock count (the characteristic metric of SSI's metastable failure).
package consensusbench

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/meterstore/meterstore/consensus"
	"github.com/meterstore/meterstore/consensus/postgres"
)

// Config describes one benchmark run.
type Config struct {
	Shards        int           // shards written, >= 1
	Payload       int           // bytes per entry
	TruncateEvery int64         // truncate a shard every this many commits
	Workers       int           // closed-loop workers
	ClosedFor     time.Duration // closed-loop duration per mode
	StepFor       time.Duration // open-loop duration per step
	Steps         []float64     // offered load per step, as a fraction of the closed-loop peak
	TriggerSteps  []int         // steps during which a SERIALIZABLE transaction stays open
	MaxInFlight   int           // open-loop concurrency cap; arrivals beyond it queue
	Logger        *slog.Logger
}

// DefaultConfig follows the issue: >= 256 shards, 1 KiB payloads, a
// truncation every 32 commits, steps 25..200% and back to 50%.
func DefaultConfig() Config {
	return Config{
		Shards:        1024,
		Payload:       1024,
		TruncateEvery: 32,
		Workers:       16,
		ClosedFor:     10 * time.Second,
		StepFor:       8 * time.Second,
		Steps:         []float64{0.25, 0.5, 1.0, 1.5, 2.0, 0.5},
		TriggerSteps:  []int{3, 4},
		MaxInFlight:   128,
	}
}

// Step is the measurement of one open-loop step.
type Step struct {
	Load        float64 `json:"load"` // fraction of the closed-loop peak
	Trigger     bool    `json:"trigger"`
	OfferedPS   float64 `json:"offered_cas_per_s"`
	AchievedPS  float64 `json:"achieved_cas_per_s"`
	CommittedPS float64 `json:"committed_per_s"`
	P50ms       float64 `json:"p50_ms"`
	P99ms       float64 `json:"p99_ms"`
	Maxms       float64 `json:"max_ms"`
	Mismatches  int64   `json:"mismatches"`
	Retryable   int64   `json:"retryable_failures"` // serialization failures, deadlocks
	Errors      int64   `json:"errors"`             // anything else
	FirstError  string  `json:"first_error,omitempty"`
	Backlog     int64   `json:"unserved_at_end"`
	SIReadMax   int64   `json:"siread_locks_max"`
	SIReadMean  float64 `json:"siread_locks_mean"`
}

// Mode is the result for one isolation level.
type Mode struct {
	Isolation  postgres.Isolation `json:"isolation"`
	ClosedPS   float64            `json:"closed_loop_cas_per_s"`
	ClosedP50  float64            `json:"closed_loop_p50_ms"`
	ClosedP99  float64            `json:"closed_loop_p99_ms"`
	ClosedErrs int64              `json:"closed_loop_errors"`
	Steps      []Step             `json:"open_loop"`
}

// Result is the whole run.
type Result struct {
	Config struct {
		Shards, Payload, Workers, MaxInFlight int
		TruncateEvery                         int64
		StepSeconds, ClosedSeconds            float64
	} `json:"config"`
	Modes []Mode `json:"modes"`
}

// Run benchmarks both isolation levels against the server at cfg, each on a
// table of its own.
func Run(ctx context.Context, pool *pgxpool.Config, c Config) (*Result, error) {
	if c.Shards < 1 || c.Workers < 1 || c.MaxInFlight < 1 || c.TruncateEvery < 1 || len(c.Steps) == 0 {
		return nil, errors.New("consensusbench: shards, workers, in-flight cap, truncation interval and steps must be positive")
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	res := &Result{}
	res.Config.Shards, res.Config.Payload, res.Config.Workers = c.Shards, c.Payload, c.Workers
	res.Config.MaxInFlight, res.Config.TruncateEvery = c.MaxInFlight, c.TruncateEvery
	res.Config.StepSeconds, res.Config.ClosedSeconds = c.StepFor.Seconds(), c.ClosedFor.Seconds()
	for _, iso := range []postgres.Isolation{postgres.ReadCommitted, postgres.Serializable} {
		m, err := runMode(ctx, pool, c, iso)
		if err != nil {
			return nil, fmt.Errorf("consensusbench: %s: %w", iso, err)
		}
		res.Modes = append(res.Modes, m)
	}
	return res, nil
}

func runMode(ctx context.Context, poolCfg *pgxpool.Config, c Config, iso postgres.Isolation) (Mode, error) {
	cfg := poolCfg.Copy()
	cfg.MaxConns = int32(max(c.Workers, c.MaxInFlight))
	l, err := postgres.Open(ctx, cfg, postgres.Options{Table: "bench_" + string(iso), Isolation: iso})
	if err != nil {
		return Mode{}, err
	}
	defer l.Close()
	admin, err := pgx.ConnectConfig(ctx, poolCfg.ConnConfig)
	if err != nil {
		return Mode{}, err
	}
	defer admin.Close(context.Background())

	w := &writer{log: l, c: c, heads: make([]atomic.Int64, c.Shards), payload: make([]byte, c.Payload)}
	for i := range w.heads {
		w.heads[i].Store(consensus.Empty)
	}
	if err := w.resume(ctx); err != nil {
		return Mode{}, err
	}

	// Warm up (first writes of every shard, caches), then start from a
	// fresh checkpoint so that both modes meet the same server state.
	w.closedLoop(ctx, c.Workers, c.ClosedFor/4)
	if _, err := admin.Exec(ctx, "CHECKPOINT"); err != nil {
		return Mode{}, err
	}
	m := Mode{Isolation: iso}
	c.Logger.Info("closed loop", "isolation", iso, "workers", c.Workers, "for", c.ClosedFor)
	lat, n, errs := w.closedLoop(ctx, c.Workers, c.ClosedFor)
	m.ClosedPS = float64(n) / c.ClosedFor.Seconds()
	m.ClosedP50, m.ClosedP99 = pct(lat, 0.50), pct(lat, 0.99)
	m.ClosedErrs = errs
	for i, load := range c.Steps {
		trigger := slices.Contains(c.TriggerSteps, i)
		rate := load * m.ClosedPS
		c.Logger.Info("open loop step", "isolation", iso, "load", load, "rate", int(rate), "trigger", trigger)
		st, err := w.openStep(ctx, admin, poolCfg, rate, trigger)
		if err != nil {
			return Mode{}, err
		}
		st.Load = load
		m.Steps = append(m.Steps, st)
	}
	return m, nil
}

// writer appends to the shards, tracking each shard's head so that most
// CaS operations hit; a mismatch refreshes the head from the log.
type writer struct {
	log     *postgres.Log
	c       Config
	heads   []atomic.Int64
	payload []byte
	locks   sync.Map // shard index -> *sync.Mutex, held by open-loop arrivals
}

func shardName(i int) string { return fmt.Sprintf("bench-%05d", i) }

func (w *writer) resume(ctx context.Context) error {
	for i := range w.heads {
		e, ok, err := w.log.Head(ctx, shardName(i))
		if err != nil {
			return err
		}
		if ok {
			w.heads[i].Store(e.SeqNo)
		}
	}
	return nil
}

// cas appends once to shard i and truncates every TruncateEvery commits.
func (w *writer) cas(ctx context.Context, i int) (committed bool, err error) {
	exp := w.heads[i].Load()
	res, err := w.log.CompareAndSet(ctx, shardName(i), exp, w.payload)
	if err != nil {
		return false, err
	}
	if res == consensus.ExpectationMismatch {
		e, ok, err := w.log.Head(ctx, shardName(i))
		if err == nil && ok {
			w.heads[i].Store(e.SeqNo)
		}
		return false, err
	}
	next := exp + 1
	w.heads[i].CompareAndSwap(exp, next)
	if next > 0 && next%w.c.TruncateEvery == 0 {
		if _, err := w.log.Truncate(ctx, shardName(i), next); err != nil {
			return true, err
		}
	}
	return true, nil
}

func (w *writer) closedLoop(ctx context.Context, workers int, d time.Duration) ([]time.Duration, int64, int64) {
	var (
		mu         sync.Mutex
		all        []time.Duration
		done, errs atomic.Int64
		wg         sync.WaitGroup
	)
	deadline := time.Now().Add(d)
	for k := range workers {
		wg.Go(func() {
			var lat []time.Duration
			// Each worker owns the shards congruent to k, so the closed loop
			// measures throughput, not contention.
			for j := 0; time.Now().Before(deadline) && ctx.Err() == nil; j++ {
				i := k + workers*(j%max(1, w.c.Shards/workers))
				if i >= w.c.Shards {
					i = k % w.c.Shards
				}
				t0 := time.Now()
				ok, err := w.cas(ctx, i)
				lat = append(lat, time.Since(t0))
				switch {
				case err != nil:
					errs.Add(1)
				case ok:
					done.Add(1)
				}
			}
			mu.Lock()
			all = append(all, lat...)
			mu.Unlock()
		})
	}
	wg.Wait()
	return all, done.Load(), errs.Load()
}

// openStep offers CaS arrivals at a fixed rate for StepFor. Latency counts
// from the scheduled arrival, so queueing behind a slow server shows up
// instead of being hidden by a slower client (coordinated omission).
func (w *writer) openStep(ctx context.Context, admin *pgx.Conn, poolCfg *pgxpool.Config, rate float64, trigger bool) (Step, error) {
	st := Step{Trigger: trigger, OfferedPS: rate}
	if rate <= 0 {
		return st, nil
	}
	stepCtx, cancel := context.WithTimeout(ctx, w.c.StepFor)
	defer cancel()
	if trigger {
		stop, err := holdSerializable(ctx, poolCfg, w.log)
		if err != nil {
			return st, err
		}
		defer stop()
	}
	samples := make(chan []int64, 1)
	go func() { samples <- sampleSIRead(stepCtx, admin) }()

	arrivals := make(chan time.Time, 1<<16)
	var (
		mu                  sync.Mutex
		lat                 []time.Duration
		served, ok, errs    atomic.Int64
		mismatches, backlog atomic.Int64
		retryable           atomic.Int64
		wg                  sync.WaitGroup
		firstErr            sync.Once
	)
	for range w.c.MaxInFlight {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
			for at := range arrivals {
				if stepCtx.Err() != nil {
					backlog.Add(1)
					continue
				}
				i := rng.IntN(w.c.Shards)
				mu2 := w.shardLock(i)
				mu2.Lock()
				committed, err := w.cas(ctx, i)
				mu2.Unlock()
				d := time.Since(at)
				served.Add(1)
				switch {
				case consensus.IsRetryable(err):
					retryable.Add(1)
				case err != nil:
					errs.Add(1)
					firstErr.Do(func() { st.FirstError = err.Error() })
				case committed:
					ok.Add(1)
				default:
					mismatches.Add(1)
				}
				mu.Lock()
				lat = append(lat, d)
				mu.Unlock()
			}
		})
	}
	interval := time.Duration(float64(time.Second) / rate)
	start := time.Now()
	for k := int64(0); ; k++ {
		at := start.Add(time.Duration(k) * interval)
		if !at.Before(start.Add(w.c.StepFor)) {
			break
		}
		if d := time.Until(at); d > 0 {
			time.Sleep(d)
		}
		select {
		case arrivals <- at:
		default:
			backlog.Add(1) // the queue itself is full: the server is far behind
		}
	}
	close(arrivals)
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	st.AchievedPS = float64(served.Load()) / elapsed
	st.CommittedPS = float64(ok.Load()) / elapsed
	st.P50ms, st.P99ms, st.Maxms = pct(lat, 0.5), pct(lat, 0.99), pct(lat, 1)
	st.Mismatches, st.Errors, st.Backlog = mismatches.Load(), errs.Load(), backlog.Load()
	st.Retryable = retryable.Load()
	cancel()
	s := <-samples
	for _, v := range s {
		st.SIReadMax = max(st.SIReadMax, v)
		st.SIReadMean += float64(v)
	}
	if len(s) > 0 {
		st.SIReadMean /= float64(len(s))
	}
	return st, nil
}

func (w *writer) shardLock(i int) *sync.Mutex {
	m, _ := w.locks.LoadOrStore(i, &sync.Mutex{})
	return m.(*sync.Mutex)
}

// holdSerializable opens the seed's trigger: a SERIALIZABLE transaction that
// read the log table and stays open, so SSI must keep the SIRead locks of
// every transaction that overlaps it.
func holdSerializable(ctx context.Context, poolCfg *pgxpool.Config, l *postgres.Log) (func(), error) {
	conn, err := pgx.ConnectConfig(ctx, poolCfg.ConnConfig)
	if err != nil {
		return nil, err
	}
	tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.Serializable})
	if err == nil {
		_, err = tx.Exec(ctx, "SELECT count(*) FROM "+l.Table()+" WHERE shard = $1", shardName(0))
	}
	if err != nil {
		conn.Close(ctx)
		return nil, err
	}
	return func() {
		tx.Rollback(context.Background())
		conn.Close(context.Background())
	}, nil
}

func sampleSIRead(ctx context.Context, admin *pgx.Conn) []int64 {
	var out []int64
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return out
		case <-t.C:
		}
		// The query gets its own deadline: cancelling it with the step
		// would close the connection.
		qctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		var n int64
		err := admin.QueryRow(qctx, "SELECT count(*) FROM pg_locks WHERE mode = 'SIReadLock'").Scan(&n)
		cancel()
		if err == nil {
			out = append(out, n)
		}
	}
}

func pct(d []time.Duration, p float64) float64 {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	i := min(len(d)-1, int(p*float64(len(d))))
	return float64(d[i].Microseconds()) / 1000
}

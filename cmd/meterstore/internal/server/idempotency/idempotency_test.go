package idempotency

import (
	"context"
	"crypto/sha256"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/meterstore/meterstore/internal/pgtest"
	"github.com/meterstore/meterstore/store"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

// newRecords returns n tables of records on one fresh database, as n
// processes have them.
func newRecords(t *testing.T, n int) []*Records {
	t.Helper()
	pool, err := pgxpool.New(context.Background(), pgtest.NewDB(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	out := make([]*Records, n)
	for i := range out {
		out[i] = New(store.ServiceDB{Pool: pool, Schema: "meterstore"})
	}
	return out
}

// TestIdempotency: a claimed key is in flight to every other claim until
// its outcome is recorded, which answers the claims after it, across two
// processes on one database; a released key and a lapsed lease are claimed
// again; an outcome past retention is taken over and pruned.
func TestIdempotency(t *testing.T) {
	rs := newRecords(t, 2)
	s1, s2 := rs[0], rs[1] // two processes on the same database
	ctx := t.Context()
	t0 := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	const lease, retention = 30 * time.Second, 24 * time.Hour
	k := Key{Token: "loader", Key: "delivery-1", Table: "power"}

	c, done, err := s1.Claim(ctx, k, t0, lease, retention)
	if err != nil || c == nil || done != nil {
		t.Fatalf("first claim: %v %v %v", c, done, err)
	}
	if _, _, err := s2.Claim(ctx, k, t0.Add(time.Second), lease, retention); !errors.Is(err, ErrInFlight) {
		t.Fatalf("a claim while the first runs: %v; want ErrInFlight", err)
	}
	// The same key of another token, or of another table, is another record.
	for _, other := range []Key{{"billing", k.Key, k.Table}, {k.Token, k.Key, "gas"}} {
		if oc, _, err := s2.Claim(ctx, other, t0, lease, retention); err != nil || oc == nil {
			t.Errorf("claim of %+v: %v %v", other, oc, err)
		}
	}
	// Extended, the lease outlives its first end.
	if err := c.Extend(ctx, t0.Add(lease+time.Minute)); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s2.Claim(ctx, k, t0.Add(lease+time.Second), lease, retention); !errors.Is(err, ErrInFlight) {
		t.Fatalf("a claim after the first lease, before the extended one: %v", err)
	}
	want := Outcome{BodySHA256: sha256.Sum256([]byte("body")), Status: 200, Body: []byte(`{"inserted":8}`), At: t0.Add(time.Minute)}
	if err := c.Complete(ctx, want); err != nil {
		t.Fatal(err)
	}
	// Recorded, the outcome answers, on either store, until retention.
	for _, s := range []*Records{s1, s2} {
		c, got, err := s.Claim(ctx, k, t0.Add(retention), lease, retention)
		if err != nil || c != nil || got == nil || got.Status != 200 || string(got.Body) != string(want.Body) ||
			got.BodySHA256 != want.BodySHA256 || !got.At.Equal(want.At) {
			t.Fatalf("a claim after the outcome: %v %+v %v; want %+v", c, got, err, want)
		}
	}
	if err := c.Complete(ctx, want); !errors.Is(err, ErrLost) {
		t.Errorf("a second Complete: %v; want ErrLost", err)
	}

	// Released, the key is claimed again at once.
	k2 := Key{Token: "loader", Key: "delivery-2", Table: "power"}
	c2, _, err := s1.Claim(ctx, k2, t0, lease, retention)
	if err != nil || c2 == nil {
		t.Fatal(c2, err)
	}
	if err := c2.Release(ctx); err != nil {
		t.Fatal(err)
	}
	c3, _, err := s2.Claim(ctx, k2, t0.Add(time.Second), lease, retention)
	if err != nil || c3 == nil {
		t.Fatalf("a claim after a release: %v %v", c3, err)
	}
	// A lease left to lapse, as by a killed process, is taken over; the
	// old claim then records nothing.
	c4, _, err := s1.Claim(ctx, k2, t0.Add(time.Second+lease), lease, retention)
	if err != nil || c4 == nil {
		t.Fatalf("a claim after the lease lapsed: %v %v", c4, err)
	}
	if err := c3.Complete(ctx, want); !errors.Is(err, ErrLost) {
		t.Errorf("Complete of a claim taken over: %v; want ErrLost", err)
	}
	if err := c3.Release(ctx); err != nil {
		t.Errorf("Release of a claim taken over: %v", err)
	}

	// Past retention an outcome is taken over by the next claim, and
	// pruned.
	if c5, done, err := s2.Claim(ctx, k, want.At.Add(retention), lease, retention); err != nil || c5 == nil || done != nil {
		t.Fatalf("a claim at the end of retention: %v %v %v", c5, done, err)
	} else if err := c5.Complete(ctx, Outcome{Status: 422, At: want.At.Add(retention)}); err != nil {
		t.Fatal(err)
	}
	// Left: k (422 at t0+1m+24h), the other token's and table's pending
	// records (leases to t0+30s) and k2's (lease to t0+61s).
	n, err := s1.Prune(ctx, t0.Add(time.Minute))
	if err != nil || n != 2 {
		t.Errorf("prune before t0+1m: %d %v; want the 2 pending records whose leases ended", n, err)
	}
	n, err = s1.Prune(ctx, t0.Add(2*time.Minute))
	if err != nil || n != 1 {
		t.Errorf("prune before t0+2m: %d %v; want k2's pending record", n, err)
	}
	if n, err := s1.Prune(ctx, want.At.Add(retention)); err != nil || n != 0 {
		t.Errorf("prune at the outcome's time: %d %v; want none", n, err)
	}
	if n, err := s1.Prune(ctx, want.At.Add(retention+time.Microsecond)); err != nil || n != 1 {
		t.Errorf("prune after the outcome: %d %v; want 1", n, err)
	}
}

// TestIdempotencyRace: of many claims of one key at once, on two stores,
// exactly one wins.
func TestIdempotencyRace(t *testing.T) {
	stores := newRecords(t, 2)
	now := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	k := Key{Token: "loader", Key: "race", Table: "power"}
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		won, lost int
	)
	for i := range 8 {
		wg.Go(func() {
			c, _, err := stores[i%2].Claim(t.Context(), k, now, time.Minute, time.Hour)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil && c != nil:
				won++
			case errors.Is(err, ErrInFlight):
				lost++
			default:
				t.Errorf("claim: %v %v", c, err)
			}
		})
	}
	wg.Wait()
	if won != 1 || lost != 7 {
		t.Errorf("%d claims won, %d in flight; want 1 and 7", won, lost)
	}
}

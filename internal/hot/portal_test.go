package hot

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// portalConn returns a connection of a new tier's pool in a transaction,
// as a snapshot's connections are.
func portalConn(t *testing.T) *pgconn.PgConn {
	t.Helper()
	_, pool := newTier(t, Options{})
	c, err := pool.Acquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Release)
	pc := c.Conn().PgConn()
	if err := pc.Exec(t.Context(), `BEGIN`).Close(); err != nil {
		t.Fatal(err)
	}
	return pc
}

// drain reads portal name of pc, of one int4 column, in batches of n
// until its end and returns its values and the number of batches; query
// binds the portal first if not empty.
func drain(t *testing.T, pc *pgconn.PgConn, name, query string, n int) ([]int32, int, error) {
	t.Helper()
	var got []int32
	for batches := 1; batches < 1000; batches++ {
		b, err := execPortal(t.Context(), pc, name, query, n, func([]pgproto3.FieldDescription) error { return nil }, func(vals [][]byte) {
			v, err := decodeInt(KindInt32, vals[0])
			if err != nil {
				t.Errorf("value %x: %v", vals[0], err)
			}
			got = append(got, int32(v))
		})
		query = ""
		if err == nil {
			err = b.err
		}
		if err != nil || !b.more {
			return got, batches, err
		}
	}
	t.Fatal("the portal did not end")
	return nil, 0, nil
}

func TestPortalBatches(t *testing.T) {
	pc := portalConn(t)
	// Two portals of one connection take turns, as cursors of a snapshot
	// do; one ends on a batch's boundary.
	q := func(n int) string {
		return `SELECT x::int4 FROM generate_series(1, ` + strconv.Itoa(n) + `) x ORDER BY x`
	}
	a1, _, err := drain(t, pc, "a", q(10), 3)
	if err != nil {
		t.Fatal(err)
	}
	// b is bound, then a third portal runs before b goes on.
	b1, err := execPortal(t.Context(), pc, "b", q(6), 3, func([]pgproto3.FieldDescription) error { return nil }, func([][]byte) {})
	if err != nil || b1.err != nil || !b1.more {
		t.Fatalf("b's first batch: %v, %v, more %v", err, b1.err, b1.more)
	}
	c, _, err := drain(t, pc, "c", q(4), 2)
	if err != nil {
		t.Fatal(err)
	}
	rest, batches, err := drain(t, pc, "b", "", 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(a1) != 10 || a1[9] != 10 || len(c) != 4 || len(rest) != 3 || rest[0] != 4 {
		t.Errorf("a %v, c %v, the rest of b %v", a1, c, rest)
	}
	// b's 6 rows end its second batch of 3; the third finds none.
	if batches != 2 {
		t.Errorf("the rest of b took %d batches, want 2 (one of 3 rows, one empty)", batches)
	}
}

func TestPortalErrorKeepsConnection(t *testing.T) {
	pc := portalConn(t)
	// The columns' check refuses the portal: no row is handed over.
	refused := errors.New("refused")
	b, err := execPortal(t.Context(), pc, "f", `SELECT 1`, 3, func([]pgproto3.FieldDescription) error { return refused },
		func([][]byte) { t.Error("a row of a refused portal was handed over") })
	if err != nil || !errors.Is(b.err, refused) {
		t.Errorf("refused portal: %v, %v", err, b.err)
	}
	// The third batch divides by zero: the server's error, after rows.
	got, _, err := drain(t, pc, "e", `SELECT (10 / (7 - x))::int4 FROM generate_series(1, 10) x`, 3)
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != "22012" {
		t.Fatalf("error %v; want division by zero", err)
	}
	if len(got) != 6 {
		t.Errorf("%d rows before the error, want 6", len(got))
	}
	// The connection is in sync: the aborted transaction ends, the next
	// statement runs.
	if err := pc.Exec(t.Context(), `ROLLBACK`).Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := pc.Exec(t.Context(), `SELECT 1`).ReadAll(); err != nil {
		t.Fatal(err)
	}
}

func TestPortalCancel(t *testing.T) {
	pc := portalConn(t)
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	b, err := execPortal(ctx, pc, "slow", `SELECT 1::int4 FROM pg_sleep(30)`, 10, func([]pgproto3.FieldDescription) error { return nil }, func([][]byte) {})
	if took := time.Since(start); took > cancelGrace+5*time.Second {
		t.Errorf("the cancelled batch took %v", took)
	}
	if err == nil {
		err = b.err
	}
	var pe *pgconn.PgError
	if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &pe) || pe.Code != "57014" {
		t.Fatalf("error %v; want the deadline and the server's cancellation", err)
	}
	if pc.IsClosed() {
		t.Fatal("the server answered the cancellation, yet the connection was closed")
	}
	if err := pc.Exec(t.Context(), `ROLLBACK`).Close(); err != nil {
		t.Fatal(err)
	}
	// A context ended before the batch sends nothing.
	b, err = execPortal(ctx, pc, "late", `SELECT 1`, 10, nil, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a batch after the deadline: %v, %v", err, b.err)
	}
	if _, err := pc.Exec(t.Context(), `SELECT 1`).ReadAll(); err != nil {
		t.Fatal(err)
	}
}

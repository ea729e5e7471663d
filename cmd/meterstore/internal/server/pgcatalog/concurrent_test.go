package pgcatalog

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/meterstore/meterstore/internal/pgtest"
)

// TestConcurrentRuns runs catalog statements from several goroutines on
// two connections, mixing answers, PostgreSQL's errors, clients that stop
// reading mid-answer and cancelled contexts: every answer is right, and
// no connection is handed on inside a transaction or an answer (the next
// statement on it would fail), nor kept.
func TestConcurrentRuns(t *testing.T) {
	s := openStore(t, pgtest.NewDB(t), "power", "gas")
	c := openCatalog(t, s, Options{MaxConns: 2})
	const workers, rounds = 6, 12
	var wg sync.WaitGroup
	errs := make(chan error, workers*rounds)
	stop := errors.New("client gone")
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range rounds {
				ctx, cancel := context.WithCancel(t.Context())
				var rows []string
				var err error
				switch (w + i) % 4 {
				case 0, 1:
					_, err = c.Run(ctx, "SELECT nspname FROM pg_catalog.pg_namespace WHERE nspname IN ('gas', 'power') ORDER BY 1", nil, nil, nil, nil,
						func([]pgproto3.FieldDescription) error { return nil },
						func(v [][]byte) error { rows = append(rows, string(v[0])); return nil })
					if err == nil && fmt.Sprint(rows) != "[gas power]" {
						err = fmt.Errorf("rows %q", rows)
					}
				case 2:
					_, err = c.Run(ctx, "SELECT 1 / (relnatts - relnatts) FROM pg_catalog.pg_class", nil, nil, nil, nil,
						func([]pgproto3.FieldDescription) error { return nil }, func([][]byte) error { return nil })
					var pe *pgconn.PgError
					if errors.As(err, &pe) && pe.Code == "22012" {
						err = nil
					} else {
						err = fmt.Errorf("division by zero: %v", err)
					}
				case 3:
					n := 0
					_, err = c.Run(ctx, "SELECT relname FROM pg_catalog.pg_class", nil, nil, nil, nil,
						func([]pgproto3.FieldDescription) error { return nil },
						func([][]byte) error {
							if n++; n == 2 {
								if w%2 == 0 {
									return stop
								}
								cancel()
							}
							return nil
						})
					if errors.Is(err, stop) || (err != nil && ctx.Err() != nil) {
						err = nil
					} else {
						err = fmt.Errorf("a client that stopped reading: %v", err)
					}
				}
				cancel()
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	// A closed connection is destroyed in the background: wait for it,
	// boundedly.
	for i := 0; i < 200 && c.pool.Stat().AcquiredConns() > 0; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if n := c.pool.Stat().AcquiredConns(); n != 0 {
		t.Errorf("%d connections kept", n)
	}
	for range 4 {
		if _, rows, _, err := collect(t, c, "SELECT current_database() = $1", c.Database()); err != nil || fmt.Sprint(rows) != "[[t]]" {
			t.Errorf("after the runs: %v %v", rows, err)
		}
	}
}

// TestRowsKept keeps every row Run hands on, as the wire protocol's server
// does when it buffers rows ahead of the client: none is overwritten by
// the next, and NULL stays apart from the empty string.
func TestRowsKept(t *testing.T) {
	s := openStore(t, pgtest.NewDB(t), "power", "gas")
	c := openCatalog(t, s, Options{})
	sql := "SELECT relname, NULLIF(relname, relname), '' FROM pg_catalog.pg_class ORDER BY relname"
	var kept [][][]byte
	if _, err := c.Run(t.Context(), sql, nil, nil, nil, nil,
		func([]pgproto3.FieldDescription) error { return nil },
		func(v [][]byte) error { kept = append(kept, v); return nil }); err != nil {
		t.Fatal(err)
	}
	_, want, err := direct(t, adminOn(t, s, c.Database()), sql)
	if err != nil {
		t.Fatal(err)
	}
	if len(kept) != len(want) || len(kept) < 100 {
		t.Fatalf("%d rows kept, %d wanted", len(kept), len(want))
	}
	for i, r := range kept {
		if string(r[0]) != want[i][0] || r[1] != nil || r[2] == nil || len(r[2]) != 0 {
			t.Fatalf("row %d kept as %q, PostgreSQL's %q", i, r, want[i])
		}
	}
}

// TestConcurrentOpen opens the Catalog of one deployment from several
// goroutines at once, as processes of one deployment starting together
// do: each opens, and each answers.
func TestConcurrentOpen(t *testing.T) {
	s := openStore(t, pgtest.NewDB(t), "power", "gas")
	const n = 4
	cats := make([]*Catalog, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cats[i], errs[i] = Open(t.Context(), s, Options{})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Open %d: %v", i, err)
			continue
		}
		_, rows, _, err := collect(t, cats[i], "SELECT nspname FROM pg_catalog.pg_namespace WHERE nspname IN ('gas', 'power', 'system') ORDER BY 1")
		if err != nil || fmt.Sprint(rows) != "[[gas] [power] [system]]" {
			t.Errorf("Catalog %d: %v %v", i, rows, err)
		}
	}
	for i := range n {
		if cats[i] != nil {
			if i == n-1 {
				dropShapes(t, s, cats[i])
			} else {
				cats[i].Close()
			}
		}
	}
}

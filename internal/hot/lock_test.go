package hot

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/meterstore/meterstore/series"
)

// TestPartitionCreationLocks shows, on a real server, what the way a
// partition is created does to concurrent writers while a long read
// transaction holds the parent: MeterStore's creation (standalone table,
// bound CHECK, ATTACH) neither waits for the reader nor blocks writers;
// CREATE TABLE ... PARTITION OF waits for ACCESS EXCLUSIVE behind the reader,
// and a writer of an existing partition queues behind it.
func TestPartitionCreationLocks(t *testing.T) {
	h, pool := newTier(t, Options{})
	tab := lastgang("lastgang")
	declare(t, h, tab)
	mustWrite(t, h, tab, meterDay(0, 1))

	// Writes go through their own pool, so the server shows them by name.
	cfg := pool.Config().Copy()
	cfg.ConnConfig.RuntimeParams["application_name"] = "hot-writer"
	wpool, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer wpool.Close()
	writer, err := New(wpool, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// write writes a fresh meter-day into the existing partition, giving
	// up after a minute, far beyond any wait that is not a block.
	meter := 100
	write := func() error {
		meter++
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_, err := writer.Write(ctx, tab, meterDay(meter, 1))
		return err
	}

	// The long-running reader: ACCESS SHARE on the parent and its
	// partitions until it ends.
	reader, err := pool.Begin(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Rollback(context.Background())
	if _, err := reader.Exec(context.Background(), `SELECT count(*) FROM `+h.ident(tab.Name)); err != nil {
		t.Fatal(err)
	}

	t.Run("meterstore", func(t *testing.T) {
		// Hold every lock the creation takes by keeping its
		// transaction open, and write meanwhile.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback(context.Background())
		start := day.AddDate(0, 0, 2)
		p := Partition{Name: partitionName(tab, start), From: start, To: start.AddDate(0, 0, 1)}
		if _, err := tx.Exec(ctx, `SET LOCAL lock_timeout = '3s'`); err != nil {
			t.Fatal(err)
		}
		if created, err := h.createPartitionTx(ctx, tx, tab, p); err != nil || !created {
			t.Fatalf("create partition beside the reader: created %v, %v", created, err)
		}
		// LIKE reads the parent (ACCESS SHARE); ATTACH takes SHARE
		// UPDATE EXCLUSIVE. Neither conflicts with reads or writes.
		if got := lockModes(t, pool, tx, tab); got != "AccessShareLock,ShareUpdateExclusiveLock" {
			t.Fatalf("creation holds %q on the parent, want AccessShareLock,ShareUpdateExclusiveLock", got)
		}
		if err := write(); err != nil {
			t.Fatalf("write while the creation holds its locks: %v", err)
		}
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM `+h.ident(tab.Name)).Scan(&n); err != nil {
			t.Fatalf("read while the creation holds its locks: %v", err)
		}
		if err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		// And through the API, with the reader still open.
		created, err := h.CreatePartitions(ctx, tab, start.AddDate(0, 0, 1), start.AddDate(0, 0, 1))
		if err != nil || len(created) != 1 {
			t.Fatalf("CreatePartitions beside the reader: %v, %v", created, err)
		}
		if err := write(); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("partition of", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		ddl, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer ddl.Rollback(context.Background())
		var ddlPID int
		if err := ddl.QueryRow(ctx, `SELECT pg_backend_pid()`).Scan(&ddlPID); err != nil {
			t.Fatal(err)
		}
		start := day.AddDate(0, 0, 5)
		naive := make(chan error, 1)
		go func() {
			lay, err := h.layoutOf(ctx, pool, tab)
			if err != nil {
				naive <- err
				return
			}
			_, err = ddl.Exec(ctx, `CREATE TABLE `+h.ident(partitionName(tab, start))+` PARTITION OF `+h.ident(tab.Name)+
				` FOR VALUES FROM (`+lay.fromLit(tab, start)+`) TO (`+lay.fromLit(tab, start.AddDate(0, 0, 1))+`)`)
			naive <- err
		}()
		waitFor(t, pool, `SELECT EXISTS (SELECT 1 FROM pg_locks WHERE pid = $1 AND NOT granted AND relation = $2::regclass)`,
			ddlPID, h.ident(tab.Name))

		wrote := make(chan error, 1)
		go func() { wrote <- write() }()
		// The writer waits for a lock, and on nothing else: it is behind
		// the queued ACCESS EXCLUSIVE, though the reader's ACCESS SHARE
		// alone would not stop it.
		waitFor(t, pool, `SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE application_name = 'hot-writer' AND wait_event_type = 'Lock')`)
		select {
		case err := <-wrote:
			t.Fatalf("write finished while CREATE TABLE ... PARTITION OF was queued: %v", err)
		default:
		}

		if err := reader.Rollback(ctx); err != nil { // the long query ends
			t.Fatal(err)
		}
		if err := <-naive; err != nil {
			t.Fatalf("CREATE TABLE ... PARTITION OF: %v", err)
		}
		if err := ddl.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if err := <-wrote; err != nil {
			t.Fatalf("write after the queue cleared: %v", err)
		}
	})
}

// lockModes returns the modes of the locks tx holds on t's parent.
func lockModes(t *testing.T, pool *pgxpool.Pool, tx pgx.Tx, tab *series.Table) string {
	t.Helper()
	var pid int
	if err := tx.QueryRow(context.Background(), `SELECT pg_backend_pid()`).Scan(&pid); err != nil {
		t.Fatal(err)
	}
	var modes string
	err := pool.QueryRow(context.Background(), `SELECT coalesce(string_agg(mode, ',' ORDER BY mode), '')
FROM pg_locks WHERE pid = $1 AND granted AND relation = to_regclass($2)`, pid, `"meterstore".`+quote(tab.Name)).Scan(&modes)
	if err != nil {
		t.Fatal(err)
	}
	return modes
}

// waitFor polls a boolean query until it is true, for at most a minute.
func waitFor(t *testing.T, pool *pgxpool.Pool, query string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		var ok bool
		if err := pool.QueryRow(context.Background(), query, args...).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still false after a minute: %s %v", query, args)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestPartitionCreationDefers shows the other outcome the issue allows: when
// a conflicting lock is held, creation gives up after the lock timeout,
// reports ErrDeferred, and leaves nothing behind.
func TestPartitionCreationDefers(t *testing.T) {
	h, pool := newTier(t, Options{DDLLockTimeout: 100 * time.Millisecond})
	tab := lastgang("lastgang")
	declare(t, h, tab)
	ctx := context.Background()
	blocker, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Rollback(ctx)
	// SHARE UPDATE EXCLUSIVE conflicts with itself: a VACUUM or another
	// ATTACH would hold it.
	if _, err := blocker.Exec(ctx, `LOCK TABLE `+h.ident(tab.Name)+` IN SHARE UPDATE EXCLUSIVE MODE`); err != nil {
		t.Fatal(err)
	}
	start := day.AddDate(0, 0, 3)
	created, err := h.CreatePartitions(ctx, tab, start, start)
	if !errors.Is(err, ErrDeferred) || !series.IsRetryable(err) || len(created) != 0 {
		t.Fatalf("CreatePartitions under a held lock: %v, %v; want ErrDeferred, retryable", created, err)
	}
	wantError(t, err, series.Unavailable)
	var exists bool
	if err := pool.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, h.ident(partitionName(tab, start))).Scan(&exists); err != nil || exists {
		t.Fatalf("deferred creation left %s behind: %v, %v", partitionName(tab, start), exists, err)
	}
	// Writers of existing partitions were never in the way.
	mustWrite(t, h, tab, meterDay(1, 1))
	if err := blocker.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if created, err := h.CreatePartitions(ctx, tab, start, start); err != nil || len(created) != 1 {
		t.Fatalf("retry after the lock was released: %v, %v", created, err)
	}
}

// TestDetachDefers: detach needs ACCESS EXCLUSIVE, so a long reader makes it
// give up after the lock timeout, changing nothing, and writers queued
// behind it for at most that long proceed.
func TestDetachDefers(t *testing.T) {
	h, pool := newTier(t, Options{DDLLockTimeout: 200 * time.Millisecond})
	tab := lastgang("lastgang")
	declare(t, h, tab)
	ctx := context.Background()
	reader, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Rollback(ctx)
	if _, err := reader.Exec(ctx, `SELECT count(*) FROM `+h.ident(tab.Name)); err != nil {
		t.Fatal(err)
	}
	err = h.Detach(ctx, tab, day)
	if !errors.Is(err, ErrDeferred) || !series.IsRetryable(err) {
		t.Fatalf("Detach beside a reader: %v; want ErrDeferred", err)
	}
	parts, err := h.Partitions(ctx, tab)
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 2 || !parts[0].Attached {
		t.Fatalf("after a deferred detach: %+v", parts)
	}
	mustWrite(t, h, tab, meterDay(2, 1))
	reader.Rollback(ctx)
	if err := h.Detach(ctx, tab, day); err != nil {
		t.Fatal(err)
	}
}

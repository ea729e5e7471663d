package privacy

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/meterstore/meterstore/series"
)

const (
	requestBasis = "Art. 17 DSGVO, request 2026-0142"
	desk         = "privacy-desk"
)

// hashOf is the subject hash computed by its definition, HMAC-SHA256 of
// the domain and the natural id under key, independently of the package.
func hashOf(key []byte, naturalID string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("meterstore.privacy.subject\x00" + naturalID))
	return m.Sum(nil)
}

type erasureRow struct {
	Action      string
	Hash        []byte
	LegalBasis  string
	Actor       string
	Removed     int64
	At          time.Time
	Suppression bool // the hash is on the suppression list
}

// erasureRows returns erasure_log in order, each row with whether its
// subject is suppressed now.
func erasureRows(t testing.TB, reg *Registry, pool *pgxpool.Pool) []erasureRow {
	t.Helper()
	rows, _ := pool.Query(context.Background(), `SELECT e.action, e.subject_hash, e.legal_basis, e.actor, e.removed, e.at,
			EXISTS (SELECT 1 FROM `+reg.suppressed+` s WHERE s.subject_hash = e.subject_hash)
		FROM `+reg.erasures+` e ORDER BY e.id`)
	got, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (erasureRow, error) {
		var e erasureRow
		err := row.Scan(&e.Action, &e.Hash, &e.LegalBasis, &e.Actor, &e.Removed, &e.At, &e.Suppression)
		return e, err
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// leaks returns the rows of the registry's audit and suppression tables
// whose text holds one of ids in clear or as the hex of its bytes.
func leaks(t testing.TB, reg *Registry, pool *pgxpool.Pool, ids ...string) []string {
	t.Helper()
	var out []string
	for _, table := range []string{reg.erasures, reg.suppressed, reg.keyRow, reg.audit} {
		rows, _ := pool.Query(context.Background(), `SELECT t::text FROM `+table+` t`)
		texts, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			t.Fatal(err)
		}
		for _, text := range texts {
			for _, id := range ids {
				if strings.Contains(text, id) || strings.Contains(strings.ToLower(text), hex.EncodeToString([]byte(id))) {
					out = append(out, table+": "+text)
				}
			}
		}
	}
	return out
}

// Every erasure, also of an unknown subject, writes one audit row with the
// subject as its keyed hash, and suppresses it; no table and no log line
// holds the natural id.
func TestEraseAudit(t *testing.T) {
	ctx := context.Background()
	pool := newPool(t, nil)
	var logs bytes.Buffer
	reg, err := Open(ctx, pool, Options{SubjectKey: testKey,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	const known, unknown, other = "customer-4711-0815", "customer-9999-0404", "customer-1234-5678"
	at := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	mustRegister(t, reg, known, at)
	mustRegister(t, reg, known, at.AddDate(1, 0, 0))
	mustRegister(t, reg, other, at)

	var before time.Time
	if err := pool.QueryRow(ctx, `SELECT now()`).Scan(&before); err != nil {
		t.Fatal(err)
	}
	if n, err := reg.Erase(ctx, known, requestBasis, desk); err != nil || n != 2 {
		t.Fatalf("Erase(known) = %d, %v, want 2", n, err)
	}
	if n, err := reg.Erase(ctx, unknown, "Art. 17 DSGVO, request 2026-0143", "ops"); err != nil || n != 0 {
		t.Fatalf("Erase(unknown) = %d, %v, want 0", n, err)
	}
	var after time.Time
	if err := pool.QueryRow(ctx, `SELECT now()`).Scan(&after); err != nil {
		t.Fatal(err)
	}

	got := erasureRows(t, reg, pool)
	want := []erasureRow{
		{actionErase, hashOf(testKey, known), requestBasis, desk, 2, time.Time{}, true},
		{actionErase, hashOf(testKey, unknown), "Art. 17 DSGVO, request 2026-0143", "ops", 0, time.Time{}, true},
	}
	if len(got) != len(want) {
		t.Fatalf("%d audit rows, want %d: %+v", len(got), len(want), got)
	}
	for i := range got {
		if got[i].At.Before(before) || got[i].At.After(after) {
			t.Errorf("row %d at %v, not within [%v, %v]", i, got[i].At, before, after)
		}
		got[i].At = time.Time{}
		if g, w := fmt.Sprintf("%+v", got[i]), fmt.Sprintf("%+v", want[i]); g != w {
			t.Errorf("audit row %d:\n got %s\nwant %s", i, g, w)
		}
	}
	if n := count(t, pool, reg.suppressed); n != 2 {
		t.Errorf("%d suppressed subjects, want 2", n)
	}
	if n := count(t, pool, reg.audit); n != 0 {
		t.Errorf("erasures wrote %d rows into the sweeps' audit table", n)
	}
	if refs, err := reg.References(ctx, other); err != nil || len(refs) != 1 {
		t.Errorf("another subject's references: %v, %v", refs, err)
	}

	if l := leaks(t, reg, pool, known, unknown, other); len(l) > 0 {
		t.Errorf("natural ids in clear: %q", l)
	}
	for _, id := range []string{known, unknown, other} {
		if strings.Contains(logs.String(), id) {
			t.Errorf("log holds %q:\n%s", id, logs.String())
		}
	}
	if !strings.Contains(logs.String(), hex.EncodeToString(hashOf(testKey, known))) {
		t.Errorf("log does not name the erased subject by its hash:\n%s", logs.String())
	}

	// The hash is keyed: under another key the same subject has another.
	otherKey := bytes.Repeat([]byte{7}, MinSubjectKeyLen)
	other2, err := Open(ctx, pool, Options{Schema: "other", SubjectKey: otherKey})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other2.Erase(ctx, known, requestBasis, desk); err != nil {
		t.Fatal(err)
	}
	rows := erasureRows(t, other2, pool)
	if len(rows) != 1 || !bytes.Equal(rows[0].Hash, hashOf(otherKey, known)) || bytes.Equal(rows[0].Hash, got[0].Hash) {
		t.Fatalf("erasure under another key: %+v", rows)
	}
	plain := sha256.Sum256([]byte(known))
	if bytes.Equal(rows[0].Hash, plain[:]) || bytes.Equal(got[0].Hash, plain[:]) {
		t.Error("subject hash is the unkeyed SHA-256 of the natural id")
	}
}

func TestEraseRefuses(t *testing.T) {
	ctx := context.Background()
	reg, pool := newRegistry(t)
	mustRegister(t, reg, "K-1", timeUTC(2025, 1, 1))
	for _, c := range []struct{ basis, actor string }{{"", desk}, {" ", desk}, {requestBasis, ""}, {requestBasis, "a\nb"}} {
		_, err := reg.Erase(ctx, "K-1", c.basis, c.actor)
		wantKind(t, err, series.InvalidInput)
		_, err = reg.Unsuppress(ctx, "K-1", c.basis, c.actor)
		wantKind(t, err, series.InvalidInput)
	}
	if count(t, pool, reg.subjects) != 1 || count(t, pool, reg.erasures) != 0 || count(t, pool, reg.suppressed) != 0 {
		t.Error("a refused erasure changed the registry")
	}
}

// relinkRefused erases a registered subject and checks that Register then
// refuses it, in any collection year, with ErrSuppressed, and that nothing
// links it again; another subject still registers.
func relinkRefused(ctx context.Context, reg *Registry, naturalID string) error {
	at := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	if _, err := reg.Register(ctx, naturalID, at); err != nil {
		return err
	}
	if _, err := reg.Erase(ctx, naturalID, requestBasis, desk); err != nil {
		return err
	}
	for _, when := range []time.Time{at, at.AddDate(-1, 0, 0), at.AddDate(2, 0, 0)} {
		ref, err := reg.Register(ctx, naturalID, when)
		if err == nil {
			return fmt.Errorf("Register after Erase issued %q", ref)
		}
		if !errors.Is(err, ErrSuppressed) || !series.IsKind(err, series.IntegrityViolation) || series.IsRetryable(err) {
			return fmt.Errorf("Register after Erase: %v, want an IntegrityViolation caused by ErrSuppressed", err)
		}
		if strings.Contains(err.Error(), naturalID) {
			return fmt.Errorf("error %q repeats the natural id", err)
		}
	}
	if refs, err := reg.References(ctx, naturalID); err != nil || len(refs) != 0 {
		return fmt.Errorf("references after Erase: %v, %v", refs, err)
	}
	if _, err := reg.Register(ctx, naturalID+"-other", at); err != nil {
		return fmt.Errorf("another subject: %w", err)
	}
	return nil
}

func TestEraseSuppresses(t *testing.T) {
	ctx := context.Background()
	reg, pool := newRegistry(t)
	if err := relinkRefused(ctx, reg, "customer-4711"); err != nil {
		t.Fatal(err)
	}
	// An erasure received before any value of the subject suppresses too.
	if _, err := reg.Erase(ctx, "customer-new", requestBasis, desk); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Register(ctx, "customer-new", timeUTC(2026, 1, 1)); !errors.Is(err, ErrSuppressed) {
		t.Errorf("Register after an erasure of an unknown subject: %v, want ErrSuppressed", err)
	}

	// An operator lifts the suppression, with its own audit row.
	lifted, err := reg.Unsuppress(ctx, "customer-4711", "consent of 2026-11-30, ticket 77", "operator-jane")
	if err != nil || !lifted {
		t.Fatalf("Unsuppress = %v, %v", lifted, err)
	}
	if lifted, err := reg.Unsuppress(ctx, "customer-4711", "repeated", "operator-jane"); err != nil || lifted {
		t.Fatalf("second Unsuppress = %v, %v, want false", lifted, err)
	}
	rows := erasureRows(t, reg, pool)
	if len(rows) != 4 {
		t.Fatalf("%d audit rows, want 4: %+v", len(rows), rows)
	}
	h := hashOf(testKey, "customer-4711")
	for i, w := range []struct {
		action string
		hash   []byte
		actor  string
		n      int64
	}{
		{actionErase, h, desk, 1},
		{actionErase, hashOf(testKey, "customer-new"), desk, 0},
		{actionUnsuppress, h, "operator-jane", 1},
		{actionUnsuppress, h, "operator-jane", 0},
	} {
		r := rows[i]
		if r.Action != w.action || !bytes.Equal(r.Hash, w.hash) || r.Actor != w.actor || r.Removed != w.n {
			t.Errorf("audit row %d: %+v, want %+v", i, r, w)
		}
	}
	ref, err := reg.Register(ctx, "customer-4711", timeUTC(2025, 3, 1))
	if err != nil || !refPattern.MatchString(ref) {
		t.Fatalf("Register after Unsuppress = %q, %v", ref, err)
	}
	if l := leaks(t, reg, pool, "customer-4711", "customer-new"); len(l) > 0 {
		t.Errorf("natural ids in clear: %q", l)
	}
}

// The re-link check has teeth: a registry that skips the suppression list
// fails it.
func TestEraseSuppressesBroken(t *testing.T) {
	reg, _ := newRegistry(t)
	reg.skipSuppression = true
	err := relinkRefused(context.Background(), reg, "customer-4711")
	if err == nil || !strings.Contains(err.Error(), "issued") {
		t.Fatalf("re-link check on a registry without suppression: %v, want a reissued reference", err)
	}
}

// Without a key the registry refuses to erase, registers while the list
// is empty, and refuses new references once it is not. A key is fixed by
// the first erasure and any other is refused from then on.
func TestSubjectKey(t *testing.T) {
	ctx := context.Background()
	pool := newPool(t, nil)
	at := timeUTC(2025, 5, 1)
	_, err := Open(ctx, pool, Options{SubjectKey: testKey[:MinSubjectKeyLen-1]})
	wantKind(t, err, series.InvalidConfig)

	keyless, err := Open(ctx, pool, Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = keyless.Erase(ctx, "K-1", requestBasis, desk)
	wantKind(t, err, series.InvalidConfig)
	if !errors.Is(err, ErrNoSubjectKey) {
		t.Errorf("keyless Erase: %v, want ErrNoSubjectKey", err)
	}
	_, err = keyless.Unsuppress(ctx, "K-1", requestBasis, desk)
	if !errors.Is(err, ErrNoSubjectKey) {
		t.Errorf("keyless Unsuppress: %v, want ErrNoSubjectKey", err)
	}
	old := mustRegister(t, keyless, "K-1", at)

	// Opened before any erasure, another key is not refused yet.
	otherKey := bytes.Repeat([]byte("k"), MinSubjectKeyLen)
	other, err := Open(ctx, pool, Options{SubjectKey: otherKey})
	if err != nil {
		t.Fatal(err)
	}
	keyed, err := Open(ctx, pool, Options{SubjectKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := keyed.Erase(ctx, "K-2", requestBasis, desk); err != nil {
		t.Fatal(err)
	}

	_, err = keyless.Register(ctx, "K-3", at)
	wantKind(t, err, series.InvalidConfig)
	if !errors.Is(err, ErrNoSubjectKey) {
		t.Errorf("keyless Register beside a suppression list: %v, want ErrNoSubjectKey", err)
	}
	if ref, err := keyless.Register(ctx, "K-1", at); err != nil || ref != old {
		t.Errorf("keyless Register of a registered subject-year = %q, %v, want %q", ref, err, old)
	}

	_, err = Open(ctx, pool, Options{SubjectKey: otherKey})
	wantKind(t, err, series.InvalidConfig)
	if !errors.Is(err, ErrSubjectKeyMismatch) {
		t.Errorf("Open with another key: %v, want ErrSubjectKeyMismatch", err)
	}
	_, err = other.Register(ctx, "K-3", at)
	if !errors.Is(err, ErrSubjectKeyMismatch) || !series.IsKind(err, series.InvalidConfig) {
		t.Errorf("Register with another key: %v, want ErrSubjectKeyMismatch", err)
	}
	for _, f := range []func() error{
		func() error { _, err := other.Erase(ctx, "K-1", requestBasis, desk); return err },
		func() error { _, err := other.Unsuppress(ctx, "K-2", requestBasis, desk); return err },
	} {
		if err := f(); !errors.Is(err, ErrSubjectKeyMismatch) || !series.IsKind(err, series.InvalidConfig) {
			t.Errorf("with another key: %v, want ErrSubjectKeyMismatch", err)
		}
	}
	if n := count(t, pool, keyed.erasures); n != 1 {
		t.Errorf("%d audit rows, want only the one erasure", n)
	}
	if _, _, ok, _ := keyed.Resolve(ctx, old); !ok {
		t.Error("an erasure under another key removed a mapping")
	}
	if _, err := keyed.Register(ctx, "K-3", at); err != nil {
		t.Errorf("Register with the list's key: %v", err)
	}
}

// liveMappings returns how many mapping rows naturalID has.
func liveMappings(ctx context.Context, reg *Registry, naturalID string) (int64, error) {
	var n int64
	err := reg.pool.QueryRow(ctx, `SELECT count(*) FROM `+reg.subjects+` WHERE natural_id = $1`, naturalID).Scan(&n)
	return n, err
}

// Erase and Register of the same subject race; whatever the order, the
// erased subject ends with no mapping and suppressed.
func TestEraseRegisterConcurrent(t *testing.T) {
	ctx := context.Background()
	reg, _ := newRegistry(t)
	const rounds, registrations = 30, 40
	for round := range rounds {
		id := fmt.Sprintf("customer-%d", round)
		// The erasure starts once a few registrations went through, so
		// that it overlaps the ones that follow.
		start, underway := make(chan struct{}), make(chan struct{})
		lead := 1 + round%8
		var wg sync.WaitGroup
		var issued, refused int
		var regErr, eraseErr error
		wg.Go(func() {
			<-start
			defer func() {
				if issued+refused < lead {
					close(underway)
				}
			}()
			for i := range registrations {
				if i == lead {
					close(underway)
				}
				// Several collection years, so that most calls insert.
				_, err := reg.Register(ctx, id, time.Date(2000+i, 6, 1, 0, 0, 0, 0, time.UTC))
				switch {
				case err == nil:
					issued++
				case errors.Is(err, ErrSuppressed):
					refused++
				default:
					regErr = err
					return
				}
			}
		})
		wg.Go(func() {
			<-underway
			_, eraseErr = reg.Erase(ctx, id, requestBasis, desk)
		})
		close(start)
		wg.Wait()
		if regErr != nil || eraseErr != nil {
			t.Fatalf("round %d: register %v, erase %v", round, regErr, eraseErr)
		}
		if n, err := liveMappings(ctx, reg, id); err != nil || n != 0 {
			t.Fatalf("round %d: %d live mappings of the erased subject (%v); %d issued, %d refused",
				round, n, err, issued, refused)
		}
		if _, err := reg.Register(ctx, id, timeUTC(2030, 1, 1)); !errors.Is(err, ErrSuppressed) {
			t.Fatalf("round %d: Register after the race: %v", round, err)
		}
		t.Logf("round %d: %d issued before the erasure, %d refused after", round, issued, refused)
	}
}

// waitFor polls until the database has a backend waiting on a lock of the
// given wait event, or done is closed, or ten seconds pass; it reports
// which happened.
func waitFor(t testing.TB, pool *pgxpool.Pool, event string, done <-chan struct{}) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-done:
			return "done"
		default:
		}
		var n int
		if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock' AND wait_event = $1`, event).Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return "waiting"
		}
		time.Sleep(5 * time.Millisecond)
	}
	return "timeout"
}

// interleave forces the one order that loses an erasure without the
// subject lock: Register has checked the list and waits to insert (held up
// by an uncommitted row of the same subject-year) while Erase runs; then
// the insert goes ahead. It returns the live mappings of the subject at
// the end.
func interleave(t *testing.T, reg *Registry, pool *pgxpool.Pool) int64 {
	ctx := context.Background()
	const id = "customer-race"
	at := timeUTC(2025, 7, 1)
	blocker, err := pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Rollback(ctx)
	if _, err := blocker.Exec(ctx, `INSERT INTO `+reg.subjects+` (reference, natural_id, collection_year, collected_at)
		VALUES ('s_blocker', $1, 2025, $2)`, id, at); err != nil {
		t.Fatal(err)
	}

	registered := make(chan struct{})
	var regErr error
	go func() {
		defer close(registered)
		_, regErr = reg.Register(ctx, id, at)
	}()
	if w := waitFor(t, pool, "transactionid", registered); w != "waiting" {
		t.Fatalf("Register did not wait for the uncommitted row: %s (%v)", w, regErr)
	}

	erased := make(chan struct{})
	var eraseErr error
	go func() {
		defer close(erased)
		_, eraseErr = reg.Erase(ctx, id, requestBasis, desk)
	}()
	w := waitFor(t, pool, "advisory", erased)
	t.Logf("Erase while Register waits: %s", w)
	if w == "timeout" {
		t.Fatal("Erase neither finished nor waited for the subject lock")
	}
	if err := blocker.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	for _, ch := range []chan struct{}{registered, erased} {
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatal("Register or Erase did not finish")
		}
	}
	if regErr != nil || eraseErr != nil {
		t.Fatalf("register %v, erase %v", regErr, eraseErr)
	}
	n, err := liveMappings(ctx, reg, id)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// In the order that would lose it, the erasure still wins; without the
// subject lock, the same order leaves the erased subject linked, which
// shows the test can fail.
func TestEraseRegisterInterleaved(t *testing.T) {
	t.Run("locked", func(t *testing.T) {
		reg, pool := newRegistry(t)
		if n := interleave(t, reg, pool); n != 0 {
			t.Errorf("%d live mappings of the erased subject, want 0", n)
		}
	})
	t.Run("broken", func(t *testing.T) {
		reg, pool := newRegistry(t)
		reg.skipSubjectLock = true
		if n := interleave(t, reg, pool); n != 1 {
			t.Errorf("without the subject lock: %d live mappings, want the 1 the lock prevents", n)
		}
	})
}

// oldDDL is the registry as Open created it before erasures were audited.
const oldDDL = `
CREATE SCHEMA meterstore;
CREATE TABLE meterstore.subjects (
	reference       text PRIMARY KEY CHECK (reference <> ''),
	natural_id      text NOT NULL CHECK (natural_id <> ''),
	collection_year integer NOT NULL,
	collected_at    timestamptz NOT NULL,
	registered_at   timestamptz NOT NULL DEFAULT now(),
	CONSTRAINT subjects_natural_id_year_key UNIQUE (natural_id, collection_year)
);
CREATE INDEX subjects_collection_year_idx ON meterstore.subjects (collection_year);
CREATE INDEX subjects_collected_at_idx ON meterstore.subjects (collected_at);
CREATE TABLE meterstore.retention_log (
	id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	at          timestamptz NOT NULL,
	legal_basis text NOT NULL CHECK (legal_basis <> ''),
	actor       text NOT NULL CHECK (actor <> ''),
	retention   text NOT NULL,
	removed     bigint NOT NULL CHECK (removed >= 0),
	recorded_at timestamptz NOT NULL DEFAULT now()
);
INSERT INTO meterstore.subjects (reference, natural_id, collection_year, collected_at)
	VALUES ('s_old2024', 'customer-old', 2024, '2024-05-01Z'), ('s_gone2019', 'customer-due', 2019, '2019-05-01Z');
INSERT INTO meterstore.retention_log (at, legal_basis, actor, retention, removed)
	VALUES ('2025-01-01Z', '§ 60 Abs. 6 MsbG', 'retention-job', 'CalendarYears(3)', 7);
`

// A registry created before erasures were audited gains the new tables on
// Open, keeps its rows, and works; a second Open changes nothing.
func TestEraseUpgrade(t *testing.T) {
	ctx := context.Background()
	rec := &recorder{}
	pool := newPool(t, rec)
	if _, err := pool.Exec(ctx, oldDDL); err != nil {
		t.Fatal(err)
	}
	reg, err := Open(ctx, pool, Options{SubjectKey: testKey})
	if err != nil {
		t.Fatal(err)
	}
	if ref, err := reg.Register(ctx, "customer-old", timeUTC(2024, 6, 1)); err != nil || ref != "s_old2024" {
		t.Errorf("old subject: %q, %v", ref, err)
	}
	if n, err := reg.Erase(ctx, "customer-old", requestBasis, desk); err != nil || n != 1 {
		t.Fatalf("Erase of an old subject = %d, %v", n, err)
	}
	if _, err := reg.Register(ctx, "customer-old", timeUTC(2026, 1, 1)); !errors.Is(err, ErrSuppressed) {
		t.Errorf("Register after Erase: %v", err)
	}
	if n := sweep(t, reg, timeUTC(2026, 1, 1), CalendarYears(3)); n != 1 {
		t.Errorf("sweep removed %d, want the 2019 subject", n)
	}
	var old struct {
		Basis, Actor, Retention string
		Removed                 int64
	}
	if err := pool.QueryRow(ctx, `SELECT legal_basis, actor, retention, removed FROM `+reg.audit+` ORDER BY id LIMIT 1`).
		Scan(&old.Basis, &old.Actor, &old.Retention, &old.Removed); err != nil || old.Removed != 7 || old.Retention != "CalendarYears(3)" {
		t.Errorf("old sweep row: %+v, %v", old, err)
	}
	if n := count(t, pool, reg.audit); n != 2 {
		t.Errorf("%d sweep rows, want the old one and the new one", n)
	}
	if rows := erasureRows(t, reg, pool); len(rows) != 1 || rows[0].Removed != 1 {
		t.Errorf("erasure rows %+v", rows)
	}

	rec.take()
	if _, err := Open(ctx, pool, Options{SubjectKey: testKey}); err != nil {
		t.Fatal(err)
	}
	for _, sql := range rec.take() {
		if !strings.HasPrefix(strings.TrimSpace(sql), "SELECT") {
			t.Errorf("second Open ran %s", sql)
		}
	}
	if n := count(t, pool, reg.subjects); n != 0 {
		t.Errorf("%d mapping rows left after the erasure and the sweep", n)
	}
}

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/meterstore/meterstore/internal/pgtest"
	"github.com/meterstore/meterstore/privacy"
)

// TestEraseCommand: `erase` unlinks a subject registered before, audits it
// and keeps the subject from being registered again until `erase --lift`;
// without retention.subject_key it refuses.
func TestEraseCommand(t *testing.T) {
	dir := t.TempDir()
	db := pgtest.NewDB(t)
	key := strings.Repeat("k", 40)
	cfg := func(name, subjectKey string) []string {
		p := filepath.Join(dir, name)
		mustRun(t, "init", p)
		tmpl, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		text := strings.Replace(string(tmpl), `url = ""`, fmt.Sprintf("url = %q", db), 1)
		text = strings.Replace(text, `data_dir = "meterstore-data"`, fmt.Sprintf("data_dir = %q", dir), 1)
		text = strings.Replace(text, `url = "file://meterstore-data/warehouse"`, fmt.Sprintf("url = %q", "file://"+filepath.Join(dir, "wh")), 1)
		text = strings.Replace(text, `subject_key = ""`, fmt.Sprintf("subject_key = %q", subjectKey), 1)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return []string{"-c", p}
	}
	withKey, without := cfg("key.toml", key), cfg("nokey.toml", "")

	ctx := context.Background()
	pool, err := pgxpool.New(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	reg, err := privacy.Open(ctx, pool, privacy.Options{Schema: "meterstore", SubjectKey: []byte(key)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Register(ctx, "customer-4711", time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}

	if out, code := run(t, append([]string{"erase", "--subject", "customer-4711"}, without...)...); code != exitPermanent {
		t.Fatalf("erase without a subject key: exit %d\n%s", code, out)
	}
	out := mustRun(t, append([]string{"erase", "--subject", "customer-4711", "--legal-basis", "Art. 17 DSGVO, request 12"}, withKey...)...)
	if !strings.Contains(out, "erased: 1 references unlinked") {
		t.Fatalf("erase: %s", out)
	}
	var rows int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM meterstore.erasure_log WHERE legal_basis = 'Art. 17 DSGVO, request 12'`).Scan(&rows); err != nil || rows != 1 {
		t.Fatalf("%d audit rows, %v", rows, err)
	}
	if _, err := reg.Register(ctx, "customer-4711", time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)); !errors.Is(err, privacy.ErrSuppressed) {
		t.Fatalf("register after erase: %v", err)
	}
	if out := mustRun(t, append([]string{"erase", "--lift", "--subject", "customer-4711"}, withKey...)...); !strings.Contains(out, "suppression lifted: true") {
		t.Fatalf("erase --lift: %s", out)
	}
	if _, err := reg.Register(ctx, "customer-4711", time.Date(2026, 4, 1, 0, 0, 0, 0, time.UTC)); err != nil {
		t.Fatalf("register after the suppression was lifted: %v", err)
	}
}

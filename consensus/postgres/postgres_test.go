package postgres

import (
	"context"
	"errors"
	"testing"

	"github.com/anishathalye/porcupine"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/meterstore/meterstore/consensus"
	"github.com/meterstore/meterstore/consensus/consensustest"
	"github.com/meterstore/meterstore/internal/pgtest"
)

func TestMain(m *testing.M) { pgtest.Main(m) }

func open(t testing.TB, url string, opts Options) *Log {
	t.Helper()
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns = 32
	l, err := Open(context.Background(), cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l
}

func TestConformance(t *testing.T) {
	for _, iso := range []Isolation{ReadCommitted, Serializable} {
		t.Run(string(iso), func(t *testing.T) {
			url := pgtest.NewDB(t)
			n := 0
			consensustest.Run(t, func(t *testing.T) consensus.Log {
				// Each subtest gets its own table, so shard names may repeat.
				n++
				return open(t, url, Options{Table: "log" + string(rune('a'+n)), Isolation: iso})
			})
		})
	}
}

func TestIsolationApplied(t *testing.T) {
	url := pgtest.NewDB(t)
	for _, iso := range []Isolation{ReadCommitted, Serializable} {
		l := open(t, url, Options{Isolation: iso})
		var got string
		if err := l.pool.QueryRow(t.Context(), "SHOW transaction_isolation").Scan(&got); err != nil {
			t.Fatal(err)
		}
		if want := map[Isolation]string{ReadCommitted: "read committed", Serializable: "serializable"}[iso]; got != want {
			t.Fatalf("%s: transaction_isolation = %q", iso, got)
		}
	}
	if _, err := ParseIsolation("repeatable_read"); !errors.Is(err, consensus.ErrInvalid) {
		t.Fatalf("ParseIsolation(repeatable_read) = %v", err)
	}
}

// TestQuotedNames uses a schema and table that need quoting.
func TestQuotedNames(t *testing.T) {
	url := pgtest.NewDB(t)
	l := open(t, url, Options{Schema: `My "Schema"`, Table: `log; DROP TABLE x`})
	consensustest.Append(t, l, "s", consensus.Empty, "e0")
	var n int
	err := l.pool.QueryRow(t.Context(), `SELECT count(*) FROM "My ""Schema"""."log; DROP TABLE x"`).Scan(&n)
	if err != nil || n != 2 { // the marker and entry 0
		t.Fatalf("rows = %d, %v; want 2", n, err)
	}
}

// TestMarkerRow checks the marker on the server itself: present after the
// first write, never truncated, never confused with an entry.
func TestMarkerRow(t *testing.T) {
	l := open(t, pgtest.NewDB(t), Options{})
	for i := range 5 {
		consensustest.Append(t, l, "s", int64(i)-1, "x")
	}
	if _, err := l.Truncate(t.Context(), "s", 4); err != nil {
		t.Fatal(err)
	}
	rows, err := l.pool.Query(t.Context(), "SELECT seqno FROM "+l.table+" WHERE shard = 's' ORDER BY seqno")
	if err != nil {
		t.Fatal(err)
	}
	seqs, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		t.Fatal(err)
	}
	if len(seqs) != 2 || seqs[0] != -1 || seqs[1] != 4 {
		t.Fatalf("rows = %v, want [-1 4]", seqs)
	}
}

func TestLinearizable(t *testing.T) {
	modes := map[string]func(i int) Isolation{
		"read_committed": func(int) Isolation { return ReadCommitted },
		"serializable":   func(int) Isolation { return Serializable },
		"mixed": func(i int) Isolation {
			if i%2 == 0 {
				return ReadCommitted
			}
			return Serializable
		},
	}
	for _, name := range []string{"read_committed", "serializable", "mixed"} {
		t.Run(name, func(t *testing.T) {
			url := pgtest.NewDB(t)
			logs := map[Isolation]*Log{
				ReadCommitted: open(t, url, Options{Isolation: ReadCommitted}),
				Serializable:  open(t, url, Options{Isolation: Serializable}),
			}
			w := consensustest.Workload{
				Clients: 16,
				Shards:  []string{"hot-a", "hot-b", "hot-c", "hot-d", "hot-e"},
				Ops:     20000,
				Seed:    7,
			}
			h, st, err := w.Run(t.Context(), func(i int) consensus.Log { return logs[modes[name](i)] })
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: %d operations recorded, %+v", name, len(h), st)
			if len(h) < 19000 || st.Committed < 1000 || st.Mismatches == 0 || st.Refused == 0 {
				t.Fatalf("workload too tame: %d ops, %+v", len(h), st)
			}
			res, info := consensustest.Check(h, 0)
			if res != porcupine.Ok {
				consensustest.Visualize(t, info)
				t.Fatalf("history of %d operations is %v", len(h), res)
			}
			checkContiguous(t, logs[ReadCommitted], w.Shards)
		})
	}
}

// checkContiguous reads the table directly: per shard, the marker plus one
// interval of sequence numbers.
func checkContiguous(t *testing.T, l *Log, shards []string) {
	t.Helper()
	for _, sh := range shards {
		if err := contiguous(t.Context(), l, sh); err != nil {
			t.Error(err)
		}
	}
}

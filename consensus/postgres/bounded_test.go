package postgres

import (
	"fmt"
	"strings"
	"testing"

	"github.com/meterstore/meterstore/consensus/consensustest"
	"github.com/meterstore/meterstore/internal/pgtest"
)

// TestTruncatedShardIsBounded ages a shard by 300 commits, truncating to
// a tail of 32 as the catalog does, next to a shard that is never
// truncated: the truncated shard keeps only its tail as rows, and Head
// reads it through the primary key's index whatever the table holds
// (no sequential scan, no sort of the shard's rows).
func TestTruncatedShardIsBounded(t *testing.T) {
	const commits, keep = 300, 32
	l := open(t, pgtest.NewDB(t), Options{})
	for i := range commits {
		consensustest.Append(t, l, "aged", int64(i)-1, fmt.Sprint("e", i))
		consensustest.Append(t, l, "untrimmed", int64(i)-1, fmt.Sprint("e", i))
		if seq := int64(i); seq >= keep && seq%(keep/2) == 0 {
			if _, err := l.Truncate(t.Context(), "aged", seq-keep+1); err != nil {
				t.Fatal(err)
			}
		}
	}
	rows := func(shard string) int {
		var n int
		err := l.pool.QueryRow(t.Context(), "SELECT count(*) FROM "+l.table+" WHERE shard = $1 AND seqno >= 0", shard).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := rows("aged"); n < keep || n >= keep+keep/2 {
		t.Fatalf("the truncated shard has %d rows, want %d..%d", n, keep, keep+keep/2-1)
	}
	if n := rows("untrimmed"); n != commits {
		t.Fatalf("the untruncated shard has %d rows, want %d", n, commits)
	}
	e, ok, err := l.Head(t.Context(), "aged")
	if err != nil || !ok || e.SeqNo != commits-1 || string(e.Data) != fmt.Sprint("e", commits-1) {
		t.Fatalf("head = %v %v %v, want entry %d", e, ok, err, commits-1)
	}
	if _, err := l.pool.Exec(t.Context(), "ANALYZE "+l.table); err != nil {
		t.Fatal(err)
	}
	for _, shard := range []string{"aged", "untrimmed"} {
		plan := explain(t, l, shard)
		if !strings.Contains(plan, "Index Scan Backward") || strings.Contains(plan, "Seq Scan") || strings.Contains(plan, "Sort") {
			t.Fatalf("Head on %s is planned as\n%s\nwant a backward scan of the primary key's index", shard, plan)
		}
	}
}

func explain(t *testing.T, l *Log, shard string) string {
	t.Helper()
	rows, err := l.pool.Query(t.Context(), "EXPLAIN "+newStatements(l.table).head, shard)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var lines []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

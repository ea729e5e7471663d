package postgres

import "strings"

// statements are the SQL of seed 000 for one table.
type statements struct {
	head, scan, first, cas, truncate string
}

func newStatements(table string) statements {
	q := func(s string) string { return strings.ReplaceAll(s, "{t}", table) }
	return statements{
		// The marker at -1 is not an entry.
		head: q(`SELECT seqno, data FROM {t}
WHERE shard = $1 AND seqno >= 0
ORDER BY seqno DESC LIMIT 1`),

		scan: q(`SELECT seqno, data FROM {t}
WHERE shard = $1 AND seqno >= $2
ORDER BY seqno LIMIT $3`),

		// The marker row makes a stale first writer collide in the live
		// index; NOT EXISTS keeps the statement a read that SSI tracks when
		// it runs under SERIALIZABLE next to other serializable writers.
		first: q(`INSERT INTO {t} (shard, seqno, data)
SELECT v.shard, v.seqno, v.data
FROM (VALUES ($1::text, -1::bigint, ''::bytea), ($1::text, 0::bigint, $2::bytea))
	AS v (shard, seqno, data)
WHERE NOT EXISTS (SELECT 1 FROM {t} WHERE shard = $1)`),

		cas: q(`WITH expected_row AS (
	SELECT seqno FROM {t}
	WHERE shard = $1 AND seqno = $2
	FOR KEY SHARE
)
INSERT INTO {t} (shard, seqno, data)
SELECT $1, seqno + 1, $3 FROM expected_row`),

		// Cut 0 removes nothing and is always allowed; any other cut needs
		// an entry at or above it, which also keeps the head.
		truncate: q(`WITH guard AS (
	SELECT $2::bigint = 0 OR EXISTS (
		SELECT 1 FROM {t} WHERE shard = $1 AND seqno >= $2
	) AS ok
), removed AS (
	DELETE FROM {t}
	WHERE shard = $1 AND seqno >= 0 AND seqno < $2 AND (SELECT ok FROM guard)
	RETURNING 1
)
SELECT (SELECT ok FROM guard), (SELECT count(*) FROM removed)`),
	}
}

package pgcatalog

import (
	"encoding/json"
	"os"
	"testing"
)

// BenchmarkHandles measures the routing the wire protocol's server asks
// of every statement: a data statement, and the longest statement a
// client was found to send (SQLAlchemy's get_columns).
func BenchmarkHandles(b *testing.B) {
	raw, err := os.ReadFile("testdata/clients.json")
	if err != nil {
		b.Fatal(err)
	}
	var cs []captured
	if err := json.Unmarshal(raw, &cs); err != nil {
		b.Fatal(err)
	}
	longest := ""
	for _, c := range cs {
		if len(c.SQL) > len(longest) {
			longest = c.SQL
		}
	}
	for name, sql := range map[string]string{
		"data":    `SELECT malo_id, "from", value FROM power.readings WHERE "from" >= $1 AND malo_id = $2 ORDER BY "from"`,
		"longest": longest,
	} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(sql)))
			for b.Loop() {
				analyse(sql, testSchemas)
			}
		})
	}
}

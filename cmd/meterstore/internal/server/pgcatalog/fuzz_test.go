package pgcatalog

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// FuzzAnalyse checks that no statement panics the routing, and that the
// version() rewrite of a statement it takes cuts it at token bounds.
func FuzzAnalyse(f *testing.F) {
	b, err := os.ReadFile("testdata/clients.json")
	if err != nil {
		f.Fatal(err)
	}
	var cs []captured
	if err := json.Unmarshal(b, &cs); err != nil {
		f.Fatal(err)
	}
	for _, c := range cs {
		f.Add(c.SQL)
	}
	f.Add("SELECT version(), pg_catalog.version() FROM pg_class WHERE relname = E'\\'' /* /* */ */ -- x")
	f.Add("SELECT $a$ $$ $a$, U&'\\0041' UESCAPE '!', u&\"x\", x'ff', 1.5e-3, .5, $1::regclass")
	c := &Catalog{schemas: testSchemas, version: "PostgreSQL 15 (MeterStore x)",
		o: Options{User: func(context.Context) (string, bool) { return "o'user", true }}}
	f.Fuzz(func(t *testing.T, sql string) {
		r := analyse(sql, testSchemas)
		if !r.handled() {
			return
		}
		text, err := c.text(context.Background(), sql)
		if err != nil {
			t.Fatalf("Handles takes %q, text refuses it: %v", sql, err)
		}
		if n := len(r.answered); n > 0 && !strings.Contains(text, "(MeterStore x)") && !strings.Contains(text, "'o''user'") {
			t.Fatalf("%d calls answered in %q, none rewritten: %q", n, sql, text)
		}
	})
}

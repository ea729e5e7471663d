package store

import (
	"context"
	"testing"

	"github.com/meterstore/meterstore/internal/query"
	"github.com/meterstore/meterstore/series"
)

// soleEngine returns a query engine over the one table decl, whose tiers
// src reads, for a test that reads a table another way than the store's.
func soleEngine(t *testing.T, decl *series.Table, src query.Source, set query.Settings) *query.Engine {
	t.Helper()
	qt, err := query.NewTable(decl, src)
	if err != nil {
		t.Fatal(err)
	}
	e, err := query.New(set, query.Tables{Names: []string{decl.Name}, Open: func(context.Context, string) (*query.Table, error) { return qt, nil }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	return e
}

package catalog_test

import (
	"database/sql"
	"testing"

	"github.com/apache/iceberg-go"
	icecatalog "github.com/apache/iceberg-go/catalog"
	icesql "github.com/apache/iceberg-go/catalog/sql"
	"github.com/apache/iceberg-go/table"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx" for iceberg-go's SQL catalog
	"github.com/meterstore/meterstore/catalog"
	"github.com/meterstore/meterstore/catalog/catalogtest"
	"github.com/meterstore/meterstore/internal/pgtest"
)

// pass is a commit check that lets every commit through, so that a
// guarded catalog takes the guard's path on every commit.
func pass(table.Identifier, table.Metadata, table.Metadata) error { return nil }

// TestConformance runs the catalog conformance suite over the log-backed
// catalog on each backend, and over iceberg-go's SQL catalog on
// PostgreSQL behind Guard. (The REST catalog behind Guard runs it in
// package catalog/rest.)
func TestConformance(t *testing.T) {
	for _, be := range catalogtest.Backends() {
		t.Run(be.Name, func(t *testing.T) {
			catalogtest.Run(t, func(t *testing.T) icecatalog.Catalog { return be.Open(t) }, catalogtest.Features{})
		})
	}
	t.Run("guarded-sql", func(t *testing.T) {
		catalogtest.Run(t, func(t *testing.T) icecatalog.Catalog {
			db, err := sql.Open("pgx", pgtest.NewDB(t))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			cat, err := icesql.NewCatalog("meterstore", db, icesql.Postgres, iceberg.Properties{"warehouse": "file://" + t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			return catalog.Guard(cat, pass)
		}, catalogtest.Features{Rename: true})
	})
}

package pgcatalog

import (
	"context"

	"github.com/jackc/pgx/v5/pgproto3"
)

// wireCatalog is the interface the wire protocol's server (pgwire)
// declares for what answers catalog statements; *Catalog implements it
// without importing pgwire.
type wireCatalog interface {
	Handles(sql string) bool
	ServerVersion() string
	Describe(ctx context.Context, sql string, paramOIDs []uint32) (params []uint32, fields []pgproto3.FieldDescription, err error)
	Run(ctx context.Context, sql string, params [][]byte, paramOIDs []uint32, paramFormats, resultFormats []int16,
		describe func([]pgproto3.FieldDescription) error, row func([][]byte) error) (tag string, err error)
}

var _ wireCatalog = (*Catalog)(nil)

package pgwire

import (
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgtype"
)

// versionCatalog answers SELECT version() and refuses pg_catalog.pg_roles
// with an error of its own; it records whether the session may read
// power.
type versionCatalog struct{ mayPower chan bool }

func (versionCatalog) Handles(sql string) bool {
	return strings.Contains(sql, "version()") || strings.Contains(sql, "pg_roles")
}

func (versionCatalog) ServerVersion() string { return "16.4 (MeterStore)" }

var versionField = pgproto3.FieldDescription{Name: []byte("version"), DataTypeOID: pgtype.TextOID, DataTypeSize: -1, TypeModifier: -1}

func (versionCatalog) Describe(ctx context.Context, sql string, paramOIDs []uint32) ([]uint32, []pgproto3.FieldDescription, error) {
	return []uint32{}, []pgproto3.FieldDescription{versionField}, nil
}

func (c versionCatalog) Run(ctx context.Context, sql string, params [][]byte, paramOIDs []uint32, paramFormats, resultFormats []int16,
	describe func([]pgproto3.FieldDescription) error, row func([][]byte) error) (string, error) {
	c.mayPower <- MayRead(ctx, "power")
	if strings.Contains(sql, "pg_roles") {
		return "", &pgconn.PgError{Code: "42501", Message: "pg_roles is not served"}
	}
	if err := describe([]pgproto3.FieldDescription{versionField}); err != nil {
		return "", err
	}
	return "SELECT 1", row([][]byte{[]byte("PostgreSQL 16.4 (MeterStore)")})
}

// TestCatalogHook: the statements the catalog handles are its to answer,
// in the simple and the extended protocol, its errors passed on with
// their SQLSTATE, its server_version reported; it sees the token's
// tables; the rest goes to the store.
func TestCatalogHook(t *testing.T) {
	cat := versionCatalog{mayPower: make(chan bool, 4)}
	_, addr := testServer(t, Options{Catalog: cat})
	conn, err := connect(t, addr, "reporting", testPassword, "disable")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(t.Context())
	if v := conn.PgConn().ParameterStatus("server_version"); v != "16.4 (MeterStore)" {
		t.Errorf("server_version %q", v)
	}
	for _, mode := range []any{nil, "simple"} {
		var v string
		args := []any{}
		if mode != nil {
			args = append(args, pgx.QueryExecModeSimpleProtocol)
		}
		if err := conn.QueryRow(t.Context(), "SELECT version()", args...).Scan(&v); err != nil || v != "PostgreSQL 16.4 (MeterStore)" {
			t.Errorf("SELECT version() (%v): %q, %v", mode, v, err)
		}
		if !<-cat.mayPower {
			t.Error("the catalog was told the token may not read power")
		}
	}
	if _, err := conn.Exec(t.Context(), "SELECT * FROM pg_catalog.pg_roles"); codeOf(err) != "42501" || !strings.Contains(err.Error(), "pg_roles is not served") {
		t.Errorf("the catalog's error: %v", err)
	}
	<-cat.mayPower
	if _, err := conn.Exec(t.Context(), "SELECT 1"); codeOf(err) != "25006" {
		t.Errorf("a statement the catalog does not handle: %v, want the store's refusal", err)
	}
}

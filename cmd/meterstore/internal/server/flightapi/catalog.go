package flightapi

// The metadata calls: GetSqlInfo, GetCatalogs, GetDbSchemas, GetTables and
// GetTableTypes, over the names of names.go. A call lists only the tables
// its token may touch.

import (
	"context"
	"regexp"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql/schema_ref"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/meterstore/meterstore/internal/arrowrows"
	"github.com/meterstore/meterstore/store"
)

// The table types GetTables reports.
const (
	typeTable  = "TABLE"
	typeSystem = "SYSTEM TABLE"
)

// registerSqlInfo registers what GetSqlInfo answers: who the server is,
// that it reads SQL and writes nothing, and no transactions.
func (s *server) registerSqlInfo() error {
	version := s.o.Version
	if version == "" {
		version = "dev"
	}
	for id, v := range map[flightsql.SqlInfo]any{
		flightsql.SqlInfoFlightSqlServerName:         "meterstore",
		flightsql.SqlInfoFlightSqlServerVersion:      version,
		flightsql.SqlInfoFlightSqlServerArrowVersion: "18",
		flightsql.SqlInfoFlightSqlServerReadOnly:     true,
		flightsql.SqlInfoFlightSqlServerSql:          true,
		flightsql.SqlInfoFlightSqlServerSubstrait:    false,
		flightsql.SqlInfoFlightSqlServerTransaction:  int32(flightsql.SqlTransactionNone),
		flightsql.SqlInfoFlightSqlServerCancel:       false,
		flightsql.SqlInfoTransactionsSupported:       false,
		flightsql.SqlInfoDDLCatalog:                  false,
		flightsql.SqlInfoDDLSchema:                   false,
		flightsql.SqlInfoDDLTable:                    false,
		flightsql.SqlInfoIdentifierQuoteChar:         `"`,
	} {
		if err := s.RegisterSqlInfo(id, v); err != nil {
			return err
		}
	}
	return nil
}

// metaInfo is the FlightInfo of a metadata call: its schema is known, and
// its ticket is the command.
func metaInfo(desc *flight.FlightDescriptor, sc *arrow.Schema) *flight.FlightInfo {
	info := ticketInfo(desc, desc.Cmd)
	info.Schema = flight.SerializeSchema(sc, memory.DefaultAllocator)
	return info
}

// GetFlightInfoCatalogs describes GetCatalogs.
func (s *server) GetFlightInfoCatalogs(_ context.Context, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return metaInfo(desc, schema_ref.Catalogs), nil
}

// DoGetCatalogs answers the one catalog.
func (s *server) DoGetCatalogs(context.Context) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	return batch(schema_ref.Catalogs, [][]any{{Catalog}})
}

// GetFlightInfoSchemas describes GetDbSchemas.
func (s *server) GetFlightInfoSchemas(_ context.Context, _ flightsql.GetDBSchemas, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return metaInfo(desc, schema_ref.DBSchemas), nil
}

// DoGetDBSchemas answers a db_schema per table the token may touch, and
// the system schema.
func (s *server) DoGetDBSchemas(ctx context.Context, cmd flightsql.GetDBSchemas) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	var rows [][]any
	if catalogMatches(cmd.GetCatalog()) {
		pat, err := likePattern(cmd.GetDBSchemaFilterPattern())
		if err != nil {
			return nil, nil, err
		}
		for _, sch := range s.schemas(ctx) {
			if pat.MatchString(sch) {
				rows = append(rows, []any{Catalog, sch})
			}
		}
	}
	return batch(schema_ref.DBSchemas, rows)
}

// schemas returns the db_schemas the call's token sees.
func (s *server) schemas(ctx context.Context) []string {
	return append(s.visible(ctx), SystemSchema)
}

// GetFlightInfoTables describes GetTables.
func (s *server) GetFlightInfoTables(_ context.Context, cmd flightsql.GetTables, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	if cmd.GetIncludeSchema() {
		return metaInfo(desc, schema_ref.TablesWithIncludedSchema), nil
	}
	return metaInfo(desc, schema_ref.Tables), nil
}

// DoGetTables answers readings, readings_versions and completeness in
// each table's db_schema, and the system tables, with their Arrow schemas when asked:
// those are found with DESCRIBE, which reads no rows.
func (s *server) DoGetTables(ctx context.Context, cmd flightsql.GetTables) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	sc := schema_ref.Tables
	if cmd.GetIncludeSchema() {
		sc = schema_ref.TablesWithIncludedSchema
	}
	if !catalogMatches(cmd.GetCatalog()) {
		return batch(sc, nil)
	}
	schemaPat, err := likePattern(cmd.GetDBSchemaFilterPattern())
	if err != nil {
		return nil, nil, err
	}
	tablePat, err := likePattern(cmd.GetTableNameFilterPattern())
	if err != nil {
		return nil, nil, err
	}
	wantType := func(typ string) bool {
		if len(cmd.GetTableTypes()) == 0 {
			return true
		}
		for _, t := range cmd.GetTableTypes() {
			if strings.EqualFold(t, typ) {
				return true
			}
		}
		return false
	}
	visible := s.visible(ctx)
	var rows [][]any
	add := func(table, schema, relation, typ string) error {
		if !schemaPat.MatchString(schema) || !tablePat.MatchString(relation) || !wantType(typ) {
			return nil
		}
		row := []any{Catalog, schema, relation, typ}
		if cmd.GetIncludeSchema() {
			qualified := relation
			if schema == SystemSchema {
				qualified = SystemSchema + "." + relation
			}
			rs, err := s.describe(ctx, table, qualified)
			if err != nil {
				return err
			}
			row = append(row, flight.SerializeSchema(rs, memory.DefaultAllocator))
		}
		rows = append(rows, row)
		return nil
	}
	for _, t := range visible {
		for _, r := range relations {
			if err := add(t, t, r, typeTable); err != nil {
				return nil, nil, err
			}
		}
	}
	if len(visible) > 0 && schemaPat.MatchString(SystemSchema) && wantType(typeSystem) {
		names, err := s.systemTables(ctx, visible[0])
		if err != nil {
			return nil, nil, err
		}
		for _, n := range names {
			if err := add(visible[0], SystemSchema, n, typeSystem); err != nil {
				return nil, nil, err
			}
		}
	}
	return batch(sc, rows)
}

// systemTables returns the names of the system tables, as the store
// defines them, through table.
func (s *server) systemTables(ctx context.Context, table string) ([]string, error) {
	var names []string
	err := s.s.QueryStream(ctx, table,
		"SELECT table_name FROM information_schema.tables WHERE table_schema = 'system' ORDER BY table_name",
		func(*store.ResultHeader) error { return nil },
		func(vals []any) error {
			if n, ok := vals[0].(string); ok {
				names = append(names, n)
			}
			return nil
		})
	if err != nil {
		return nil, s.failure(ctx, err, nil)
	}
	return names, nil
}

// describe returns the Arrow schema of relation as a query over table
// answers it.
func (s *server) describe(ctx context.Context, table, relation string) (*arrow.Schema, error) {
	var names, types []string
	var ci, ti int
	err := s.s.QueryStream(ctx, table, "DESCRIBE "+relation,
		func(hd *store.ResultHeader) error {
			ci, ti = index(hd.Columns, "column_name"), index(hd.Columns, "column_type")
			if ci < 0 || ti < 0 {
				return status.Errorf(codes.Internal, "DESCRIBE %s: no column_name and column_type", relation)
			}
			return nil
		},
		func(vals []any) error {
			n, _ := vals[ci].(string)
			t, _ := vals[ti].(string)
			names, types = append(names, n), append(types, t)
			return nil
		})
	if err != nil {
		return nil, s.failure(ctx, err, nil)
	}
	b := arrowrows.NewBuilder(names, types, arrowrows.Meta{})
	defer b.Release()
	return arrow.NewSchema(b.Schema().Fields(), nil), nil
}

func index(ss []string, s string) int {
	for i, x := range ss {
		if x == s {
			return i
		}
	}
	return -1
}

// GetFlightInfoTableTypes describes GetTableTypes.
func (s *server) GetFlightInfoTableTypes(_ context.Context, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	return metaInfo(desc, schema_ref.TableTypes), nil
}

// DoGetTableTypes answers the table types.
func (s *server) DoGetTableTypes(context.Context) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	return batch(schema_ref.TableTypes, [][]any{{typeSystem}, {typeTable}})
}

// catalogMatches reports whether a call's catalog filter admits the one
// catalog: none given, or its name.
func catalogMatches(c *string) bool { return c == nil || *c == Catalog }

// likePattern compiles a Flight SQL filter pattern, SQL LIKE's % and _
// with \ escaping; nil matches everything.
func likePattern(p *string) (*regexp.Regexp, error) {
	if p == nil {
		return regexp.MustCompile(`^`), nil
	}
	var b strings.Builder
	b.WriteString(`^`)
	esc := false
	for _, r := range *p {
		switch {
		case esc:
			b.WriteString(regexp.QuoteMeta(string(r)))
			esc = false
		case r == '\\':
			esc = true
		case r == '%':
			b.WriteString(`.*`)
		case r == '_':
			b.WriteString(`.`)
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteString(`$`)
	re, err := regexp.Compile(b.String())
	if err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "pattern %q: %v", *p, err)
	}
	return re, nil
}

// batch returns rows, of strings and byte slices, as one record batch of
// sc on a closed channel.
func batch(sc *arrow.Schema, rows [][]any) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for _, row := range rows {
		for i, v := range row {
			switch v := v.(type) {
			case string:
				b.Field(i).(*array.StringBuilder).Append(v)
			case []byte:
				b.Field(i).(*array.BinaryBuilder).Append(v)
			default:
				b.Field(i).AppendNull()
			}
		}
	}
	ch := make(chan flight.StreamChunk, 1)
	ch <- flight.StreamChunk{Data: b.NewRecordBatch()}
	close(ch)
	return sc, ch, nil
}

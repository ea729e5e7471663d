package store

import (
	"time"

	"github.com/meterstore/meterstore/internal/query"
	"github.com/meterstore/meterstore/series"
)

// A Result is the answer of Query: its header (the columns, and the
// watermark and tiers each table was read with), and its rows.
type Result struct {
	ResultHeader
	Rows [][]any // values as duckdb-go returns them
}

// A ResultHeader describes the answer of a query before its first row:
// its columns, and the watermark, tiers, cold snapshot and recorded_at
// ceiling it is computed with. It is the query engine's header field for
// field, so that it converts without a copy of its parts.
type ResultHeader struct {
	Columns []string // column names
	Types   []string // DuckDB type names, such as VARCHAR or DECIMAL(18,6)
	// Watermark to KnownAt describe the read of the statement's own
	// table (its default table, StatementOptions.Table), Tables' first;
	// Tables has every table's.
	//
	// Watermark is W of the cold snapshot the query read, or of the last
	// read of it when no cold file was needed; HasWatermark is false when
	// nothing is archived yet, when no tier was read, and in an answer
	// from the hot tier alone.
	Watermark    time.Time
	HasWatermark bool
	// Tiers names the tiers read, "cold" before "hot".
	Tiers []string
	// Snapshot is the ID of the cold snapshot whose files were read below
	// Watermark, 0 if none was planned. In a read as of a snapshot
	// (AsOf), it is that snapshot, Watermark is its W and SnapshotAt the
	// time it was committed.
	Snapshot   int64
	AsOf       bool
	SnapshotAt time.Time
	// Ceiling is the recorded_at ceiling applied to the rows at or above
	// Watermark, zero if none: ReadOptions.KnownAt, or in a read as of a
	// snapshot the earlier of KnownAt and SnapshotAt. KnownAt is
	// ReadOptions.KnownAt, which applies to the snapshot's own files too.
	Ceiling time.Time
	KnownAt time.Time
	// Range is the range of "from" the statement could read, and so the
	// range fetched from the tiers.
	Range series.Range
	// Tables says how each table the statement read was read, its own
	// table first, then the others it names, by name: the same fields as
	// above for each, with its name, and in a historical or operational
	// read the range of "from" it could not see (TableRead.Unseen).
	Tables []TableRead
	// Mode is the tiers the query read (ReadOptions.Mode).
	Mode ReadMode
	// Timing says where the time before the first row went: Open
	// (DuckDB, the analysis), Hot and Plan (the hot tier's snapshot and
	// the cold files' planning of every table read), Read (both, and the
	// relations over them), Run (the result), and the rows, bytes and
	// time the hot tier sent them in (HotRows, HotBytes, HotScan).
	Timing query.Timing
}

// A TableRead says how a query read one table it names: its watermark,
// tiers, cold snapshot and range (ResultHeader.Tables).
type TableRead = query.TableRead

// resultHeader is the header h of the query engine as the store hands it
// out.
func resultHeader(h *query.Header) *ResultHeader {
	rh := ResultHeader(*h)
	return &rh
}

// result is the answer res of the query engine as the store hands it out;
// nil for nil.
func result(res *query.Result) *Result {
	if res == nil {
		return nil
	}
	return &Result{ResultHeader: ResultHeader(res.Header), Rows: res.Rows}
}

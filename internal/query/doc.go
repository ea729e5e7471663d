// Package query answers SQL over both tiers of a table with DuckDB.
//
// # Relations
//
// A query sees readings_versions, every stored version of every reading:
// the cold tier's rows with from < W unioned with the hot tier's rows with
// from >= W, where W is the watermark of the cold snapshot the query read.
// Rows on the wrong side of W are not shown: a hot row below W breaks the
// tier split, which the maintenance loop reports. readings is the same with
// versions resolved: per merge key the row with the highest version, then
// the latest recorded_at. Both have the table's columns in table order. The
// in-memory relations of Engine.SetRelations (system.tables, ...) and the
// calendar functions meter_local_day, meter_gas_day, meter_balancing_day,
// meter_expected_intervals, meter_balancing_day_start and
// meter_balancing_day_end complete the session. In an interval table,
// completeness compares per series and balancing day the intervals the
// calendar expects with those in readings (see completeness.go): a query
// of it reads the days its WHERE bounds on balancing_day and the
// CompletenessLookback days before them. DuckDB's own catalog
// is called system as well; a reference system.x without a catalog is
// taken to mean the relation, and the statement runs as DuckDB renders it
// with the catalog spelled out.
//
// # Tables
//
// One Engine answers for every declared table of a deployment (Tables).
// A statement reads each table it names the same way, into the schema of
// its name: <table>.readings, <table>.readings_versions,
// <table>.completeness and <table>.daily; its default table, if it has
// one (PrepareOptions.Table), is searched first, so that an unqualified
// readings is the default table's. Each is read with its own Source,
// bounded by its own range (see Extract: a table is bounded by the
// conjuncts on its own columns where its one reference is a leaf of a plain
// join, and read unbounded otherwise), and split at its own W, into
// relations of its own; ReadOptions.AsOf and KnownAt apply to every table,
// and a read as of a snapshot ID, which is one table's, is refused for a
// statement that reads another. The tables are read one after the other,
// each as below; no snapshot spans two tables, whose watermarks move
// independently. Header.Tables reports each table's W, tiers and snapshot.
// A name that is no declared table is an invalid statement. A statement
// that calls query('...') reads, whole and with every relation, the tables
// the statement in the literal names (and so is authorised for them); its
// default table if it names it, or if a call's statement is no literal.
//
// # Reading the tiers
//
// Each query runs in a DuckDB instance of its own, in memory, or on the
// one the last statement locked down alike left (the same tables, default
// table, threads and allowed files), its result dropped and its catalog
// checked first (keep.go). The range of
// "from" the statement can read (see Extract) bounds what is fetched: the
// watermark W0 is read first, then a read of the hot tier's rows of
// [max(lo, W0), hi) opens (Source.HotRead: one PostgreSQL snapshot, which
// every connection reading for it shares), then the cold tier is planned
// for [lo, hi), and the planned snapshot's W splits the union. The hot
// snapshot before the cold plan is what makes an archival that commits in
// between harmless: rows that left the hot tier after the snapshot are in
// the snapshot planned after it, and the hot rows at or above its W are
// read as of the snapshot whenever they cross. An archival that detached
// rows before the snapshot and has not committed them is caught by
// Source.HotFloor; the query retries, and fails with an error wrapping
// ErrInFlight if the archival does not land in time. A range at or above
// W0 needs no cold plan and one below it no hot read.
//
// The hot rows cross while the statement runs, never copied into a table
// first: the read's relations are table functions of the query's DuckDB
// (hotscan.go), which its threads scan in parallel, a partition each, a
// batch at a time, with only the columns the statement needs (DuckDB's
// projection pushdown). readings takes the hot tier's rows resolved by the
// read itself where it can (in PostgreSQL's primary key order, the newest
// version of each key kept), and resolves them with the window rule
// otherwise and under a recorded_at ceiling. Header.Timing reports the hot
// rows that crossed and the time they took.
//
// An unreachable cold tier fails the query with an error wrapping
// ErrColdUnreachable, unless the range lies at or above the hot tier's
// floor: then the hot tier alone answers and Result.Tiers says so. An
// answer is never silently partial.
//
// # Reproducible reads
//
// ReadOptions.KnownAt T reads as known at transaction time T: the current
// state of both tiers, with every row whose recorded_at is after T left
// out, in the cold files as in the hot rows. recorded_at is set when a row
// is written (by PostgreSQL's now() for the hot tier, by the writer's clock
// for a late correction), so a write that was in flight at T may carry a
// recorded_at at or before T and show up only once it is acknowledged.
//
// ReadOptions.AsOfSnapshot S (or AsOf, the snapshot that was current then)
// reads as of cold snapshot S: what a query made when S was committed
// would have answered, whatever was committed, compacted or corrected
// since. It is defined as
//
//   - below W_S, S's watermark, the rows of S's own data files, as they
//     are; a late correction committed after S is in a later snapshot's
//     files and is not seen, although its from lies below W_S;
//   - at or above W_S, the rows of the current tiers, cold and hot, split at
//     the current W as usual, whose recorded_at is at most t_S, the time
//     S's commit was staged (cold.SummaryKnownAt; in a snapshot a foreign
//     engine committed, the end of the millisecond of its Iceberg
//     timestamp). Those rows were in the hot
//     tier when S was committed; an archival since may have moved them into
//     a later snapshot's files, and read from wherever they are now they
//     are the same rows. Rows recorded after t_S, corrections above W_S
//     included, are left out.
//
// With KnownAt as well, the ceiling is the earlier of the two, and KnownAt
// applies to S's files too. A snapshot's files stay until it is expired; a
// read as of an expired or unknown snapshot fails with ErrNoSnapshot, never
// with another snapshot's answer. t_S is taken when the commit is staged, so
// a write acknowledged while S's commit was in flight may fall on either
// side; every write acknowledged before the archival started is in.
// Header reports the snapshot, its W and commit time, and the ceilings.
//
// # Results
//
// Statement.Stream hands the rows of a result to the caller as they are
// read, holding none; Statement.Query collects them within Settings.MaxRows and
// MaxResultBytes. DuckDB computes a result into a temporary table, which
// it keeps within MemoryLimit and spills into CacheDir, and the rows are
// read from it a page at a time: duckdb-go would hold the result of a
// query whole in memory. A page is bounded in bytes, not rows: each row's
// bytes are measured inside DuckDB from its values before the page is
// read (sizes.go), so a page holds about 8 MiB, or one row where that row
// holds more, whatever the statement asks for. A value past 64 MiB is
// refused as DuckDB computes it, before the table holds it, a row past
// 128 MiB before its page is read (ErrResultTooLarge). DESCRIBE and SUMMARIZE, which CREATE
// TABLE AS does not take, run as they are. A statement DuckDB cannot parse
// or bind fails with an error wrapping ErrInvalidQuery.
//
// # Safety
//
// Only a single SELECT statement runs; anything else is refused with an
// error wrapping ErrNotReadOnly before it is prepared. The instance
// installs and loads no extension beyond the built-in ones (Parquet, JSON,
// ICU), and before the statement runs it is locked down: no
// external access except the planned Parquet files (allowed_paths), and the
// configuration locked, so the statement can neither read nor write any
// other file nor undo the lock.
package query

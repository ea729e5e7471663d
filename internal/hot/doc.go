// Package hot is the PostgreSQL tier of MeterStore: the recent readings
// that are still being corrected, in declared tables range-partitioned on
// the interval start.
//
// # Tables
//
// A series.Table declares a table's time model, its extra columns, its
// accepted resolutions and its partition width. Tier.Ensure creates the
// partitioned parent, with a CHECK constraint for every id and code and
// the primary key (merge key plus version), and records the declaration
// in the metadata table hot_tables. Declared again, the table takes the
// nullable columns series.Evolve allows and keeps those no longer
// declared; any other change (time model, width, resolutions, merge key)
// is refused.
//
// # Partitions
//
// Partitions are daily or monthly, aligned to UTC so that each is a whole
// number of the cold tier's day(from) or month(from) partitions, and named
// <table>_pYYYYMMDD after the day they begin. Tier.EnsurePartitions keeps
// them ahead of now by the table's headroom. They are never created with
// CREATE TABLE ... PARTITION OF, which takes ACCESS EXCLUSIVE on the parent
// and so queues every reader and writer behind any long query: a partition
// is built standalone, given a CHECK on its bound and its integrity
// constraints while no one can see it, attached under SHARE UPDATE
// EXCLUSIVE, and the CHECK dropped again. Every DDL statement runs under a
// lock timeout (Options.DDLLockTimeout, 3s by default); one that times out
// changes nothing and returns an error wrapping ErrDeferred.
//
// No partition is created below a table's partition floor (ErrBelowFloor),
// which archival raises with Tier.Fence to a window's end before it can
// move the watermark there. Floor and partition DDL share one advisory
// lock, so a partition dropped after its archival, or never made in a
// stretch an archival skipped as empty, cannot come back below W.
//
// A dropped partition's rows leave the table's companions (ownership
// relation, dictionaries, day sums, dirty log) with free space plain
// VACUUM cannot give back while live rows sit at their heaps' ends.
// Tier.Compact, which archival calls after its drops, rewrites those that
// are mostly free space with VACUUM FULL, which keeps every row version
// a snapshot may see; its lock is waited for at most 0.5s and held while
// the live rows are copied.
//
// # Integrity
//
// A batch is refused, whole, for a malformed row (Write checks ids, codes
// and the interval grid in Go; CHECK constraints repeat that for other
// clients), for a row without an attached partition, for a value restated
// under an existing key and version, for a reading delivered by two network
// operators, and for overlapping intervals of one series within a version.
// Redelivering an identical row is a no-op.
//
// Intervals must lie on the grid of their resolution (quarter hours at :00,
// :15, :30, :45; days from Berlin midnight, gas days from 06:00; ...), so
// two intervals of a series are nested or disjoint, and two of the same
// resolution overlap only when equal. A table's series.Integrity says how
// the rules between rows are enforced:
//
//   - IntegrityStatement (a new table of one resolution of fixed length,
//     unless declared otherwise): PostgreSQL enforces every rule for every
//     client at the cost of a set operation per statement. The primary
//     key and the grid rule out overlaps; the ids and codes of each series
//     are checked once (by a statement trigger, or in the dictionary
//     layout by the dictionaries' CHECKs), UPDATEs are refused, and a
//     statement trigger records the spans each network operator delivers
//     in the ownership relation <table>_operators, which refuses a
//     second operator (see integrity.go and owners_series.go).
//   - IntegrityExclusion (other new tables): GiST exclusion constraints
//     (btree_gist) enforce, per partition, one network operator per
//     reading and, in tables of several resolutions, no overlap within a
//     version; Write additionally checks the pairs that cross partitions.
//     A probe per row, several times slower.
//   - IntegrityWrite: no constraint between rows. Write serializes its
//     writers per partition with advisory locks and checks every row
//     against the stored ones in the transaction that inserts it; rows of
//     other clients are not checked against each other.
//
// A table keeps the integrity it was declared with, unless declared again
// with IntegrityStatement, which upgrades it in place (upgrade.go).
//
// # Layouts
//
// A new table of IntegrityStatement is stored in the step layout, every
// other new table in the rows layout; a table keeps the layout it was
// created in, which its stored definition records and no declaration
// changes, so the tables of a deployment made by older code (the rows
// layout, or the dictionary and lean layouts of statement tables made
// before the step one) are read and written as they are. The layout is a type
// (layout.go) whose implementations hold what of the tier's SQL differs
// between them, the table's DDL, its check function, the columns a write
// supplies, how a read finds a series and what a dropped partition
// leaves: rowsLayout (layout_rows.go), dictLayout (layout_dictionary.go)
// leanLayout (layout_lean.go) and stepLayout (layout_step.go).
// hot_tables records it as "", "dictionary", "lean" or "step", parsed
// once (parseLayout); Tier.Ensure creates
// a table's relations and refreshes its check function through it.
//
// In the rows layout a row holds every column. In the dictionary layout
// what many readings share lives once per partition's bucket in two
// dictionaries, <table>_series (market location, OBIS code, identity
// columns) and <table>_attrs (commodity, unit, resolution, version scope,
// MeLo, subject), and a reading carries their int4 ids, with the primary
// key (series, from, version): about two thirds of the bytes. A plain
// client inserts the dictionary rows first, whose CHECKs refuse bad ids
// and codes, then the readings with their ids; the statement check refuses
// an id that names no dictionary row of the reading's bucket (23503), and
// a trigger refuses changes of the dictionaries but where a partition is
// dropped or the table purged. Reads join the dictionaries back (natural),
// so every reading comes out as the rows layout stores it. The lean
// layout is the dictionary layout with a narrower row (series, attr, from,
// version, value): to is derived from from and the table's one fixed
// resolution, version is stored as int8 less 2⁶³, and quality, recorded_at
// and the balancing day are keys of the attrs dictionary. The step layout
// is the lean one with from stored as an int4 count of the resolution's
// steps since 1970 (series, attr, step, version, value): a 16-byte primary
// key (series, step, version), partitions ranged in steps, no grid CHECK,
// as a step is on the grid; readers derive from and to, and a range on
// from becomes one on step.
//
// # Writes and scans
//
// Tier.Write validates a batch in Go and writes it in one transaction. A
// batch of new readings, the common case, takes the fast path: it is
// copied straight into the table under a savepoint, and the primary key,
// the constraints, the statement trigger and the CHECKs judge it; the
// batch of a table of IntegrityWrite is then checked against the stored
// rows with one set-based statement. A batch the constraints refuse, or
// one the fast path cannot check exactly (rows whose checks reach into
// other partitions; IntegrityWrite tables of several resolutions, of
// days, months or years, or of points), goes through a
// temporary staging table instead: its rows are checked against the stored
// ones, identical redeliveries are skipped, violations are named, and the
// rest is inserted with one INSERT ... SELECT. In the dictionary layout the
// batch's dictionary keys are looked up, the missing ones inserted, first,
// and the rows carry their ids down either path. Write reports per row
// whether it was inserted or already present. Tier.WriteEach writes a
// stream of batches one after another, checking and encoding the next
// while the one before it is written (stream.go). Tier.Scan streams the
// rows of the attached partitions in primary key order.
//
// A query reads through a Snapshot (Tier.OpenSnapshot): one exported
// PostgreSQL snapshot that every connection reading for it imports, in
// which Snapshot.Read lists a table's partitions and its cursors fetch
// them, in parallel, in batches of only the columns asked for, in binary,
// and in the dictionary layout with the dictionaries as relations of
// their own; a cursor of winners reads a partition in primary key order
// and hands over only the newest version of each merge key.
//
// # Errors
//
// Every error is an *Error whose Kind says who is at fault; IsRetryable
// is true for Unavailable (a lost connection, a lock not had in time), and
// Rows names the offending rows of a refused batch.
package hot

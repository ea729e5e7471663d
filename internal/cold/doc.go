// Package cold is the Iceberg tier of MeterStore: settled readings, below
// the watermark, as Parquet files in one Iceberg table (format version 2)
// per declared table.
//
// # Tables
//
// Tier.Ensure creates the Iceberg table of a declared table, or opens the
// one there is: its schema is Schema's (the built-in columns in a fixed
// order, then the declared extra columns), its merge key is recorded in
// the property meterstore.merge-key, and it is partitioned by the month of
// from and by the column superseded, so that a month's settled versions
// and its superseded ones sit in files of their own. A table whose schema
// another writer changed so that it cannot take the declared rows (a
// required column, a changed type) is quarantined (*QuarantineError):
// archival and late corrections are refused, reads go on. Declared columns
// are added to the schema without a snapshot; a column no longer declared
// stays, NULL in later files, and one declared again takes back its former
// field, so that no declaration change makes an archived value unreadable
// (CheckDrift, evolve).
//
// # The watermark
//
// The watermark W rides in the snapshot summary under SummaryWatermark,
// committed in the same catalog compare-and-set as the data it covers, so
// the boundary and the rows below it can never disagree. WatermarkCheck,
// installed as the meterstore catalog's commit check, refuses every commit
// that would move W backwards, on iceberg-go's retries too. A snapshot that
// moves no window (late corrections, a compaction, a re-stamp) carries its
// parent's W; ReassertWatermark stamps it again onto a snapshot a foreign
// engine committed without it.
//
// # Archival and late corrections
//
// Tier.Archive writes the rows of one window [from, to), streamed from the
// hot tier's detached partition in primary key order, as sorted Parquet
// files (zstd), marking each version a later one of its merge key in the
// same window supersedes, and commits them with the new W in one snapshot.
// Memory is bounded by a batch and the row groups of the partitions the
// window touches, not by its rows. Tier.AppendLate stores corrections that
// arrive for a window archived already: the batch is checked against the
// stored versions by the rules the hot tier applies (one rulebook), written
// with the superseded column left null, and committed as a snapshot that
// re-stamps W; a commit that lost a race checks the batch again.
//
// A commit that fails deletes the files it wrote, unless its outcome is
// unknown: then they are kept, since it may still land, and a later
// orphan removal takes them if it did not.
//
// # Reading
//
// Tier.Plan returns the data files one snapshot holds for a range of from
// (and market locations), pruned by partition and column statistics, with
// that snapshot's W; Plan.Kinds tells per file what its superseded column
// says (FileKind), so that a resolved read takes Current files as they
// are, skips Superseded ones and resolves only the merge keys of Open
// files (late corrections). Tier.PlanAt plans as of a past snapshot, by id
// or time. Plan.Local copies remote files into a local cache; a file whose
// size differs from its manifest's is refused there.
//
// # Tamper evidence
//
// Every commit that writes data files records each file's SHA-256, hashed
// while it is written, in a cumulative digest index that the snapshot
// summary names with the index's own digest; a snapshot that writes no
// file names its parent's index, so the current snapshot leads to the
// digest of every live file. Tier.VerifyFiles checks each live file's size
// and footer against its manifest entry and, deep, its digest; a file that
// fails is reported (*AlteredFileError, ErrAltered). Tier.AdoptDigests
// records the digests of files written before digests were, once they
// pass the cheap checks.
//
// # Maintenance
//
// Tier.Compact merges a partition's small files and the manifests, pinned
// to the snapshot it read, deciding every superseded mark again where late
// corrections lie, and proves each file it rewrites first; W and the rows
// stay as they were. Tier.ExpireSnapshots drops snapshots past a retention,
// never the current one, and Tier.Orphans lists or deletes the files no
// snapshot references (digest indexes a kept snapshot names stay).
// Tier.Purge removes a table and its files.
//
// # Catalogs
//
// A Tier writes through any iceberg-go catalog: MeterStore's own (package
// catalog), which runs WatermarkCheck inside its log's compare-and-set, or
// iceberg-go's SQL and REST catalogs, which New wraps with catalog.Guard:
// each commit is checked against the metadata it replaces and sent pinned
// to that snapshot, so that one a concurrent commit overtook fails and is
// replayed onto the new base, checked again.
package cold

// Package archive moves settled readings from the hot tier (PostgreSQL) to
// the cold tier (Iceberg), one closed window at a time, so that PostgreSQL
// always holds exactly the readings at or above the watermark W and Iceberg
// exactly those below it.
//
// # A cycle
//
// Archiver.Cycle archives the windows of one table that are due at now, in
// order:
//
//  1. Lease. One archiver per table across processes: a session advisory
//     lock on a dedicated connection, held for the cycle and released by the
//     server when the session ends, also when the process dies. A loser
//     reports LeaseContended and touches nothing.
//  2. Window. The next window is [W, W+step), due when its end plus the
//     settlement lag is not after now. A stretch without partitions widens
//     to the next partition that exists, or to the horizon, in one commit.
//     The window is fenced (hot.Tier.Fence): no partition can be created
//     below its end any more, and one created before the fence makes the
//     cycle plan the window again.
//  3. Detach. Each partition of the window is detached under the DDL lock
//     timeout. A timeout reports Deferred; if no partition was detached,
//     nothing changed.
//  4. Stream. The detached partitions are read with a cursor, a bounded
//     chunk at a time, into one cold append: memory depends on the chunk,
//     not on the window.
//  5. Commit. The append moves W to the window's end in the same
//     compare-and-set as the data. The rows the cold tier committed must
//     equal the rows read and the rows the partitions hold; otherwise the
//     archiver returns an *InvariantError and never drops them.
//  6. Reclaim. Detached partitions that W covers are dropped by a later
//     cycle, once the reader grace has passed since their commit.
//
// A cycle archives at most Config.MaxWindowsPerCycle windows, so a store
// that was down for a month catches up over several cycles.
//
// # Recovery
//
// A detached partition is immutable, so a process that dies anywhere
// leaves a state the next cycle completes without an operator: a detached
// partition that W does not cover is archived first; one that W covers but
// whose commit the ledger did not record is checked against the snapshot
// summary of its commit. An attached partition below W is an invariant
// violation: it is reported in every outcome and never dropped.
//
// # Late corrections
//
// Router routes a batch by W: readings below it are appended to the cold
// tier after the restated-value check against the cold readings of the same
// key (W unchanged), the rest are written to the hot tier. None is ever
// parked in PostgreSQL below W.
//
// # Degrading
//
// Router routes by the last W it read of a table; only late rows, and rows
// the hot tier refuses for want of a partition, make it read W again. The
// hot tier refuses every row below the true W (its partitions are detached
// or were never made, and the fence keeps them from being made), so a
// stale W costs a retry, never a row below W, and hot ingest goes on while
// the cold tier is unreachable. Rows that need the cold tier then fail with
// a retryable error wrapping ErrColdUnreachable, and so does archival, which
// the next cycle resumes. A missing partition within Router.AcceptAhead of
// now is created on demand.
package archive

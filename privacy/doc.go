// Package privacy keeps the subject registry of a MeterStore deployment and
// destroys the links it holds on request and when § 60 Abs. 6 MsbG brings
// them due.
//
// # Registry
//
// Readings never carry a natural id such as a customer number. Their
// subject_id column holds a pseudonymous reference ("s_" and 128 random
// bits) that only the registry maps back: one table, <schema>.subjects,
// shared by every table of the deployment, with one row per subject and
// collection year (the Berlin calendar year in which the values were
// collected). Registry.Register issues references and returns the same one
// for a redelivered value; Registry.Resolve and Registry.References look
// them up.
//
// # Erasure
//
// Destroying a mapping row anonymises every reading that carries its
// reference, in both tiers, at once: nothing links the reference to a
// person any more, and since references are drawn at random nothing can be
// recomputed. No reading is read, rewritten or deleted, which keeps the
// tiers append-only and a settlement reproducible. Registry.Erase does
// this for one subject on request. What it removes is the link the
// registry holds; whether a reading is then anonymous also depends on what
// else in it identifies a person (the market location of a household, for
// instance), which is outside this package.
//
// # Retention
//
// Registry.Sweep destroys the links that a Retention has brought due: one
// indexed DELETE on the registry and one row in the audit table
// <schema>.retention_log, in one transaction. CalendarYears(3) is the
// statutory "spätestens jedoch nach drei Jahren ab dem Schluss des
// Kalenderjahres"; Rolling(d) covers the earlier end of a purpose. The
// clock is a parameter: Sweep takes now and never reads one. Retention is
// off by default, so that turning it on is the deployment's decision.
//
// # Errors
//
// Every error is an *Error whose Kind separates refused input
// (InvalidInput, InvalidConfig) from failures of the database, and
// IsRetryable is true for Unavailable: a lost connection, a lock not
// available, a deadlock or serialization failure.
package privacy

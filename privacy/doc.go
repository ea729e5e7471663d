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
// Every erasure writes one row in the audit table <schema>.erasure_log in
// the transaction of its DELETE: when, the legal basis and request
// reference, the actor, the number of mapping rows removed (0 for an
// unknown subject, which is audited too), and the subject as a keyed hash,
// HMAC-SHA256 under the deployment's secret Options.SubjectKey. The same
// transaction puts the hash on the suppression list
// <schema>.suppressed_subjects, and from then on Register refuses the
// natural id with ErrSuppressed, so a later delivery cannot link the
// erased subject again. An operator lifts a suppression with
// Registry.Unsuppress, which writes its own audit row; the next Register
// then issues a new reference, unlinked to the erased ones. Neither table
// holds a natural id, and without the key neither reveals whose erasure a
// row records.
//
// The key lives outside the database (a secret file, a vault): it is not
// generated and stored beside the list, because natural ids are few enough
// to enumerate, and whoever could read the key with the list could test
// every id against it. A registry without a key refuses to erase, and
// refuses to issue new references once the list is not empty, since it
// cannot tell whether a subject is on it; <schema>.subject_key holds a
// fingerprint of the key, recorded by the first erasure, so that a
// registry opened with another key is refused rather than blind to the
// list. Retention sweeps suppress nothing: values collected after a sweep
// are linked again under a new reference, as the statute allows.
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

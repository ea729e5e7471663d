package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/meterstore/meterstore/catalog"
	"github.com/meterstore/meterstore/internal/cold"
	"github.com/meterstore/meterstore/series"
)

// A Verification is what Verify found of one table.
type Verification struct {
	Table string
	// SnapshotID is the current cold snapshot (0: none); DataFiles and
	// DataBytes are the data files it references and their size.
	SnapshotID   int64
	Watermark    time.Time
	HasWatermark bool
	DataFiles    int
	DataBytes    int64
	// DigestedFiles counts the data files whose SHA-256 a commit recorded,
	// UndigestedFiles those without one: archived before MeterStore
	// recorded digests (see AdoptDigests), or written by a foreign engine.
	// HashedFiles counts those a deep verification read whole and
	// compared, with the files only past snapshots still reference.
	DigestedFiles, UndigestedFiles, HashedFiles int
	// Snapshots counts the snapshots whose chain was checked (every one
	// the metadata keeps: manifest list, manifests, the data files they
	// list against the digest index and the summary), PinnedSnapshots
	// those a commit pinned whole; the rest were committed before
	// MeterStore pinned manifests, or by a foreign engine.
	Snapshots, PinnedSnapshots int
	// AlteredFiles are the files found not to be the files their commits
	// recorded (each in Problems too): reads refuse a data file, or every
	// data file while a digest index or metadata file is altered, and
	// Status reports the table unhealthy, until a verification finds them
	// intact again.
	AlteredFiles []string
	// AttachedPartitions and DetachedPartitions count the table's
	// partitions in PostgreSQL; of the detached, AwaitingDrop are covered
	// by the watermark and InFlight are archivals under way.
	AttachedPartitions, DetachedPartitions, AwaitingDrop, InFlight int
	// Problems describes every invariant violation found: a data file
	// missing, or of another size, footer row count or (deep) SHA-256
	// than its commit recorded, a digest index or the current metadata
	// file altered (on the meterstore catalog, whose log records the
	// metadata file's SHA-256), an attached
	// partition below the watermark, a detached partition that neither the
	// watermark covers nor an archival recorded, a commit MeterStore did
	// not make in the table's metadata mirror (also in Forks).
	Problems []string
	// RollupDays counts the balancing days whose daily rollup was
	// compared with the readings (every settled day with Deep, else a
	// sample; a difference is in Problems; none while a data file is
	// found altered); RollupBehind says the rollup reflects an older
	// snapshot, so nothing was compared.
	RollupDays   int
	RollupBehind bool
	// RollupAlteredFiles are the files of the table's daily rollup found
	// not to be the files their commits recorded (each in Problems too):
	// its rows are not compared with the readings then.
	RollupAlteredFiles []string
	// Forks are the commits MeterStore did not make found in the table's
	// Hadoop-layout metadata mirror, and the mirror files altered in place
	// (Fork.Altered); ResolveForks moves them aside and mirrors the log
	// again.
	Forks []catalog.Fork
	// Orphans are the files under the table's location that nothing
	// references and that are older than the safety age (each in
	// Problems too): the files of a refused foreign write or a failed
	// archival, metadata snapshot expiry left. Orphans with Delete, or
	// the maintenance loop's orphan removal, deletes them. YoungOrphans
	// are the unreferenced files younger than the safety age, which a
	// commit under way may still reference: notes, not problems.
	Orphans, YoungOrphans []OrphanFile
	// Err is why the table could not be verified, or verified only in
	// part.
	Err error
}

// OK reports whether the table was verified and nothing was found.
func (v Verification) OK() bool { return v.Err == nil && len(v.Problems) == 0 }

// VerifyOptions say how closely Verify looks at the cold data files.
type VerifyOptions struct {
	// Deep reads every data file whole and compares its SHA-256 with the
	// digest its commit recorded; without it, a file's size and Parquet
	// footer are read, which an altered file of the same size and row
	// count passes.
	Deep bool
	// OrphanAge is the safety age of unreferenced files (see
	// OrphanOptions.OlderThan): an older one is a problem, a younger one
	// a note. Give it the maintenance loop's orphan age, so that what
	// verify calls a problem is what the loop removes; zero means
	// DefaultOrphanAge.
	OrphanAge time.Duration
}

// An OrphanFile is a file under a table's location that nothing
// references: its location, size and modification time.
type OrphanFile = cold.OrphanFile

// Verify checks every table more deeply than Status: every data file the
// current snapshot references exists with the size and footer row count its
// commit recorded (and, with opts.Deep, the SHA-256), and every partition
// in PostgreSQL is accounted for: an attached one at or above the
// watermark, a detached one covered by it (awaiting its drop) or recorded
// by the archival ledger as an archival under way; and every file of the
// table's metadata mirror is MeterStore's (catalog.VerifyMirror); and no
// file under the table's location that nothing references is older than
// opts.OrphanAge (see Orphans). A missing file is otherwise noticed only
// by a query that needs it.
//
// The data files found altered are recorded in the hot tier's database:
// from then on every process of the deployment refuses to read them and
// reports the table unhealthy, naming them, until a verification finds
// them intact again (a finding by digest is cleared only by a deep one).
// Verify changes nothing else.
func (s *Store) Verify(ctx context.Context, opts VerifyOptions) []Verification {
	out := make([]Verification, len(s.tables))
	for i, t := range s.tables {
		out[i] = s.verify(ctx, t, opts)
	}
	return out
}

// verify verifies t.
func (s *Store) verify(ctx context.Context, t *table, opts VerifyOptions) Verification {
	v := Verification{Table: t.decl.Name}
	var (
		errs    []error
		altered []*cold.AlteredFileError
	)
	t.mu.Lock()
	ct := t.cold
	t.mu.Unlock()
	mc := catalog.MirrorOf(s.opts.Catalog)
	if mc != nil && ct != nil {
		// The log vouches for the metadata file, which vouches for the
		// digests of the data files.
		_, err := mc.VerifyMetadata(ctx, ct.Identifier())
		var me *catalog.MetadataAlteredError
		switch {
		case errors.As(err, &me):
			altered = append(altered, &cold.AlteredFileError{Table: t.decl.Name, File: me.Location, Reason: me.Error(), Metadata: true})
			v.Problems = append(v.Problems, "the current metadata file is not the one committed: "+me.Error())
		case err != nil:
			errs = append(errs, err)
		}
	}
	fc, err := s.cold.VerifyFiles(ctx, t.cold, cold.VerifyOptions{Deep: opts.Deep})
	var ae *cold.AlteredFileError
	switch {
	case errors.As(err, &ae):
		// The metadata file, which the check above found already on the
		// meterstore catalog: nothing it names can be checked.
		if len(altered) == 0 {
			altered = append(altered, ae)
			v.Problems = append(v.Problems, "the current metadata file is not the one committed: "+ae.Error())
		}
	case err != nil:
		errs = append(errs, err)
	default:
		v.SnapshotID, v.Watermark, v.HasWatermark = fc.SnapshotID, fc.Watermark, fc.HasWatermark
		v.DataFiles, v.DataBytes = fc.Files, fc.Bytes
		v.DigestedFiles, v.UndigestedFiles, v.HashedFiles = fc.Digested, fc.Undigested, fc.Hashed+fc.PastHashed
		v.Snapshots, v.PinnedSnapshots = fc.Snapshots, fc.Pinned
		v.Problems = append(v.Problems, fc.Problems...)
		altered = append(altered, fc.Altered...)
	}
	for _, a := range altered {
		v.AlteredFiles = append(v.AlteredFiles, a.File)
		s.log.Error("store: a cold file is not the file its commit recorded; reads refuse it",
			"table", t.decl.Name, "file", a.File, "reason", a.Reason)
	}
	// What was not looked at is not cleared.
	settle := s.altered.Settle
	if len(errs) > 0 {
		settle = func(ctx context.Context, name string, found []*cold.AlteredFileError, _ bool) error {
			return s.altered.Add(ctx, name, found)
		}
	}
	if err := settle(ctx, t.decl.Name, altered, opts.Deep); err != nil {
		errs = append(errs, err)
	}
	// The rollup is compared with a scan of the data files: not while a
	// file is found altered, now or by an earlier verification that this
	// one could not clear (a cheap one does not see a digest's finding),
	// since no read serves it and the scan would count it.
	intact := len(altered) == 0
	if intact && ct != nil {
		found, err := s.altered.Files(ctx, t.decl.Name)
		if err != nil {
			errs = append(errs, err)
		}
		intact = err == nil && len(found) == 0
	}
	if ct != nil {
		filesIntact, rerrs := s.verifyRollupFiles(ctx, ct, opts, &v)
		intact = intact && filesIntact
		errs = append(errs, rerrs...)
	}
	if ct != nil && intact {
		rc, err := s.cold.VerifyRollup(ctx, ct, opts.Deep)
		if err != nil {
			errs = append(errs, err)
		}
		v.RollupDays, v.RollupBehind = rc.Days, rc.Behind
		v.Problems = append(v.Problems, rc.Problems...)
	}
	pc, err := s.arch.CheckPartitions(ctx, t.decl, t.cold)
	if err != nil {
		errs = append(errs, err)
	} else {
		v.AttachedPartitions, v.DetachedPartitions = pc.Attached, pc.Detached
		v.AwaitingDrop, v.InFlight = pc.AwaitingDrop, pc.InFlight
		v.Problems = append(v.Problems, pc.Problems...)
	}
	if mc != nil && ct != nil {
		var fe *catalog.ForkError
		err := mc.VerifyMirror(ctx, ct.Identifier())
		switch {
		case errors.As(err, &fe):
			v.Forks = fe.Forks
			for _, f := range fe.Forks {
				v.Problems = append(v.Problems, forkProblem(f))
			}
		case err != nil:
			errs = append(errs, err)
		}
	}
	// Orphans refuses a table whose mirror holds a fork, already a
	// problem: its files are listed once the fork is resolved.
	if ct != nil && len(v.Forks) == 0 {
		age := opts.OrphanAge
		if age <= 0 {
			age = DefaultOrphanAge
		}
		wall := s.opts.Now.wall()
		r, err := s.cold.Orphans(ctx, ct, cold.OrphanOptions{Before: wall.Add(-age)})
		if err != nil {
			errs = append(errs, err)
		} else {
			v.Orphans, v.YoungOrphans = append(v.Orphans, r.Orphans...), append(v.YoungOrphans, r.YoungFiles...)
			for _, o := range r.Orphans {
				v.Problems = append(v.Problems, fmt.Sprintf("a file nothing references, older than the safety age %s: %s (%d bytes, modified %s, %s ago)",
					age, o.Location, o.Size, o.ModTime.UTC().Format(time.RFC3339), wall.Sub(o.ModTime).Round(time.Minute)))
			}
		}
	}
	if len(errs) > 0 {
		v.Err = fmt.Errorf("store: verify %s: %w", t.decl.Name, errors.Join(errs...))
	}
	return v
}

// forkProblem says what fork f of a metadata mirror is.
func forkProblem(f catalog.Fork) string {
	switch {
	case f.Altered:
		return "a file of the metadata mirror is not the one committed: " + f.String()
	case f.Lost:
		return "the catalog's log lost a commit it made (a database restored from a backup?); --resolve-forks moves its mirror aside: " + f.String()
	}
	return "a commit MeterStore did not make in the metadata mirror: " + f.String()
}

// ResolveForks moves the commits MeterStore did not make out of the
// metadata mirror of table name into metadata/forked/, and mirrors the
// log's head again (catalog.ResolveForks), and those of its daily rollup
// table. It returns what it moved, for
// the operator's record; the foreign metadata and its data files are kept,
// and rows a foreign writer added reach MeterStore only by being written
// through it. A catalog that writes no mirror has nothing to resolve.
func (s *Store) ResolveForks(ctx context.Context, name string) ([]catalog.Fork, error) {
	t, ct, _, err := s.opened(ctx, name)
	if err != nil {
		return nil, err
	}
	mc := catalog.MirrorOf(s.opts.Catalog)
	if mc == nil {
		return nil, nil
	}
	forks, err := mc.ResolveForks(ctx, ct.Identifier())
	if err == nil && t.decl.TimeModel == series.Interval {
		// The daily rollup's mirror forks with the table's, when the log
		// lost commits of both.
		var rf []catalog.Fork
		rf, err = mc.ResolveForks(ctx, s.cold.RollupHandle(ct).Identifier())
		if errors.Is(err, icecatalog.ErrNoSuchTable) || errors.Is(err, icecatalog.ErrNoSuchNamespace) {
			err = nil
		}
		forks = append(forks, rf...)
	}
	for _, f := range forks {
		s.log.Warn("store: moved a commit MeterStore did not make out of the metadata mirror",
			"table", name, "file", f.File, "snapshot", f.SnapshotID, "records", f.Records)
	}
	if err != nil {
		return forks, fmt.Errorf("store: resolve forks of %s: %w", name, err)
	}
	return forks, nil
}

// Adoption reports what AdoptDigests did with one table; one with
// SnapshotID 0 committed nothing, every live file having a digest
// already. It is the cold tier's report field for field.
type Adoption struct {
	SnapshotID int64
	Files      int   // files whose digests it recorded
	Bytes      int64 // their size, read whole to hash them
}

// AdoptDigests records the SHA-256 of every live data file of table name
// that has none, having been archived before MeterStore recorded digests
// (see cold.Tier.AdoptDigests): each must first have the size and footer
// row count its manifest records. From then on `Verify` with Deep proves
// every file. An adopted digest vouches for the file as it is now; run a
// verification first. It runs under the table's archive lease.
func (s *Store) AdoptDigests(ctx context.Context, name string) (Adoption, error) {
	_, ct, _, err := s.opened(ctx, name)
	if err != nil {
		return Adoption{}, err
	}
	var out Adoption
	err = s.arch.WithLease(ctx, name, func(ctx context.Context) error {
		if err := s.vetWatermark(ctx, name, ct); err != nil {
			return err
		}
		a, err := s.cold.AdoptDigests(ctx, ct)
		out = Adoption(a)
		return err
	})
	if err != nil {
		return Adoption{}, fmt.Errorf("store: adopt digests of %s: %w", name, err)
	}
	return out, nil
}

package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/meterstore/meterstore/catalog"
	"github.com/meterstore/meterstore/internal/cold"
)

// verifyRollupFiles checks the daily rollup table of ct as verify checks
// ct itself: its current metadata file against the digest the log
// recorded, the chain of every snapshot it keeps, its data files (with
// opts.Deep, their SHA-256), its metadata mirror, and the files under its
// location that nothing references (unless the mirror holds a fork:
// ResolveForks moves the rollup's aside with the table's). What it finds goes into v, each
// problem naming the rollup; intact is false if a file of the rollup is
// not the one committed, so that its rows are not compared. A table
// without a rollup has nothing to check.
func (s *Store) verifyRollupFiles(ctx context.Context, ct *cold.Table, opts VerifyOptions, v *Verification) (intact bool, errs []error) {
	r := s.cold.RollupHandle(ct)
	forked := false
	name := "the daily rollup " + r.Name()
	fc, err := s.cold.VerifyFiles(ctx, r, cold.VerifyOptions{Deep: opts.Deep})
	var ae *cold.AlteredFileError
	switch {
	case errors.Is(err, icecatalog.ErrNoSuchTable) || errors.Is(err, icecatalog.ErrNoSuchNamespace):
		return true, nil
	case errors.As(err, &ae):
		v.RollupAlteredFiles = append(v.RollupAlteredFiles, ae.File)
		v.Problems = append(v.Problems, name+": the current metadata file is not the one committed: "+ae.Error())
	case err != nil:
		return false, []error{err}
	default:
		for _, p := range fc.Problems {
			v.Problems = append(v.Problems, name+": "+p)
		}
		for _, a := range fc.Altered {
			v.RollupAlteredFiles = append(v.RollupAlteredFiles, a.File)
		}
	}
	if mc := catalog.MirrorOf(s.opts.Catalog); mc != nil {
		var me *catalog.MetadataAlteredError
		_, err := mc.VerifyMetadata(ctx, r.Identifier())
		switch {
		case errors.As(err, &me):
			if ae == nil { // else reported above
				v.RollupAlteredFiles = append(v.RollupAlteredFiles, me.Location)
				v.Problems = append(v.Problems, name+": the current metadata file is not the one committed: "+me.Error())
			}
		case err != nil:
			errs = append(errs, err)
		}
		var fe *catalog.ForkError
		err = mc.VerifyMirror(ctx, r.Identifier())
		switch {
		case errors.As(err, &fe):
			forked = true
			for _, f := range fe.Forks {
				v.Problems = append(v.Problems, name+": "+forkProblem(f))
			}
		case err != nil:
			errs = append(errs, err)
		}
	}
	if len(v.RollupAlteredFiles) > 0 {
		for _, f := range v.RollupAlteredFiles {
			s.log.Error("store: a file of the daily rollup is not the file its commit recorded", "table", v.Table, "file", f)
		}
		return false, errs
	}
	if forked {
		// Orphans refuses a mirror that holds a fork, a problem already.
		return true, errs
	}
	age := opts.OrphanAge
	if age <= 0 {
		age = DefaultOrphanAge
	}
	wall := s.opts.Now.wall()
	or, err := s.cold.Orphans(ctx, r, cold.OrphanOptions{Before: wall.Add(-age)})
	if err != nil {
		return true, append(errs, err)
	}
	v.Orphans, v.YoungOrphans = append(v.Orphans, or.Orphans...), append(v.YoungOrphans, or.YoungFiles...)
	for _, o := range or.Orphans {
		v.Problems = append(v.Problems, fmt.Sprintf("%s: a file nothing references, older than the safety age %s: %s (%d bytes, modified %s)",
			name, age, o.Location, o.Size, o.ModTime.UTC().Format(time.RFC3339)))
	}
	return true, errs
}

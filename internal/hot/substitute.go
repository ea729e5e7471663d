package hot

import (
	"math"

	"github.com/meterstore/meterstore/internal/hot/pgnum"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// Substitute values.
//
// A substitute value (Ersatzwert, quality 67) replaces a missing or
// implausible value. Delivered without a version of its own, it is
// appended authoritatively: the write gives it the version one above the
// highest stored for its merge key, decided in the write's transaction
// under the series locks (see outcome.go), so it wins over every version
// stored before it and loses to any delivered after it. Versions are
// compared only within one version scope, so a substitute in another
// scope than the stored versions of its reading is refused.

// checkSubstitutes refuses a batch of substitute rows that carry a
// version of their own or another quality than substitute.
func checkSubstitutes(t *series.Table, rows []series.Reading) error {
	var bad series.Problems
	for i := range rows {
		r := &rows[i]
		switch {
		case r.Version != 0:
			bad.Add(i, "a substitute value comes without a version (version %d given): the store gives it the next version of its reading", r.Version)
		case r.Quality != metering.Substitute:
			bad.Add(i, "a substitute value has quality 67 (%s given)", r.Quality)
		}
	}
	return bad.Err(series.InvalidInput, "write", t.Name)
}

// firstSubstituteVersion is the version of a substitute for a reading of
// which nothing is stored. MSCONS versions are document times of 14
// digits, so any delivery of the reading wins over it.
const firstSubstituteVersion = 1

// nextVersions gives every row of b the next version of its merge key:
// one above the highest stored (others), or one above an earlier row of
// the batch for the same key. A row whose stored versions are of another
// version scope is refused.
func nextVersions(t *series.Table, b *batch) error {
	var bad series.Problems
	for i := range b.rows {
		s := &b.rows[i]
		switch {
		case s.topScope != "" && s.topScope != s.src.VersionScope:
			bad.Add(int(s.row), "substitute value in version scope %s, but version %d of the reading is stored in scope %s: versions are compared only within one scope",
				s.src.VersionScope, s.top, s.topScope)
			continue
		case s.topScope != "" && s.top == math.MaxUint64:
			bad.Add(int(s.row), "no version above the stored %d", s.top)
			continue
		}
		v := uint64(firstSubstituteVersion)
		if s.topScope != "" {
			v = s.top + 1
		}
		s.version = pgnum.Uint(v)
		s.src.Version = v
		s.lower, s.higher = s.topScope != "", false
	}
	return bad.Err(series.IntegrityViolation, "write", t.Name)
}

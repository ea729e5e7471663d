package cold

import (
	"encoding/binary"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/meterstore/meterstore/series"
)

// pruner returns whether a data file of schema sc may hold readings q
// selects, by the bounds its manifest entry records of from, malo_id and
// obis_code. A file without a bound of a column is kept; so is one whose
// bound cannot be read. The manifests it reads were proven first (see
// readChain), so a bound is the one the commit recorded.
func pruner(sc *iceberg.Schema, q series.Range) func(iceberg.DataFile) bool {
	id := func(name string) int {
		if f, ok := sc.FindFieldByName(name); ok {
			return f.ID
		}
		return -1
	}
	from, malo, obis := id("from"), id("malo_id"), id("obis_code")
	var lo, hi int64
	hasLo, hasHi := !q.From.IsZero(), !q.To.IsZero()
	if hasLo {
		lo = int64(micros(q.From))
	}
	if hasHi {
		hi = int64(micros(q.To))
	}
	return func(f iceberg.DataFile) bool {
		if from >= 0 {
			if b, ok := timeBound(f.UpperBoundValues(), from); ok && hasLo && b < lo {
				return false
			}
			if b, ok := timeBound(f.LowerBoundValues(), from); ok && hasHi && b >= hi {
				return false
			}
		}
		return mayHoldAny(f, malo, q.MaLo) && mayHoldAny(f, obis, q.OBIS)
	}
}

// timeBound decodes a timestamp bound of column id: microseconds, eight
// bytes little-endian.
func timeBound(bounds map[int][]byte, id int) (int64, bool) {
	b, ok := bounds[id]
	if !ok || len(b) != 8 {
		return 0, false
	}
	return int64(binary.LittleEndian.Uint64(b)), true
}

// mayHoldAny reports whether the string bounds of column id admit one of
// values; no values admit every file. A lower bound may be a truncated
// prefix of the least value, which only lowers it. An upper bound may be
// truncated too: Iceberg writers then increment its last character, and a
// writer that did not leaves a prefix of the greatest value, which a value
// with that prefix is therefore taken to match.
func mayHoldAny(f iceberg.DataFile, id int, values []string) bool {
	if len(values) == 0 || id < 0 {
		return true
	}
	lo, hasLo := f.LowerBoundValues()[id]
	hi, hasHi := f.UpperBoundValues()[id]
	for _, v := range values {
		if hasLo && v < string(lo) {
			continue
		}
		if hasHi && v > string(hi) && !strings.HasPrefix(v, string(hi)) {
			continue
		}
		return true
	}
	return false
}

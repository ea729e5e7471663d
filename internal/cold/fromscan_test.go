package cold

// A callback scan as Rows, as the tests stream readings into Archive: a
// helper of the tests alone.

import (
	"errors"

	"github.com/meterstore/meterstore/series"
)

// errStop ends a callback scan that FromScan's consumer no longer reads.
var errStop = errors.New("cold: stop")

// FromScan returns the readings of a callback scan as Rows. scan calls fn
// for every reading and returns fn's first error, as the hot tier's Scan
// does.
func FromScan(scan func(fn func(series.Reading) error) error) Rows {
	return func(yield func(series.Reading, error) bool) {
		err := scan(func(r series.Reading) error {
			if !yield(r, nil) {
				return errStop
			}
			return nil
		})
		if err != nil && !errors.Is(err, errStop) {
			yield(series.Reading{}, err)
		}
	}
}

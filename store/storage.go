package store

import (
	"context"
	"fmt"

	"github.com/meterstore/meterstore/internal/cold"
)

// Storage is what one table holds in each tier.
type Storage struct {
	// HotRows and HotBytes count the attached partitions' rows and their
	// size with indexes and TOAST.
	HotRows, HotBytes int64
	// ColdRows, ColdBytes and ColdFiles are the current snapshot's data
	// files.
	ColdRows, ColdBytes int64
	ColdFiles           int
}

// HotBytesPerReading returns HotBytes/HotRows, or 0 without rows.
func (s Storage) HotBytesPerReading() float64 { return ratio(s.HotBytes, s.HotRows) }

// ColdBytesPerReading returns ColdBytes/ColdRows, or 0 without rows.
func (s Storage) ColdBytesPerReading() float64 { return ratio(s.ColdBytes, s.ColdRows) }

func ratio(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// Storage measures what table name holds in each tier.
func (s *Store) Storage(ctx context.Context, name string) (Storage, error) {
	t, ct, _, err := s.opened(ctx, name)
	if err != nil {
		return Storage{}, err
	}
	var st Storage
	if st.HotRows, st.HotBytes, err = s.hot.Size(ctx, t.decl); err != nil {
		return Storage{}, fmt.Errorf("store: storage of %s: %w", name, err)
	}
	cs, err := s.cold.Storage(ctx, ct)
	if err != nil {
		return Storage{}, fmt.Errorf("store: storage of %s: %w", name, err)
	}
	st.ColdRows, st.ColdBytes, st.ColdFiles = cs.Readings, cs.Bytes, cs.Files
	return st, nil
}

// Footprint is where the bytes of a table's cold data files go, from their
// Parquet footers, against the value column's empirical entropy.
type Footprint = cold.Footprint

// ColdFootprint reads the footers and the value column of table name's cold
// data files. It reads every value, so it costs a scan of the column.
func (s *Store) ColdFootprint(ctx context.Context, name string) (Footprint, error) {
	_, ct, _, err := s.opened(ctx, name)
	if err != nil {
		return Footprint{}, err
	}
	fp, err := s.cold.Footprint(ctx, ct)
	if err != nil {
		return Footprint{}, fmt.Errorf("store: %w", err)
	}
	return fp, nil
}

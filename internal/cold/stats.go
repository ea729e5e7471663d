package cold

import (
	"context"
	"fmt"
)

// Storage is what the data files of a table's current snapshot hold.
type Storage struct {
	Files    int
	Bytes    int64 // total size of the data files
	Readings int64 // total record count
}

// BytesPerReading returns Bytes/Readings, or 0 for an empty table.
func (s Storage) BytesPerReading() float64 {
	if s.Readings == 0 {
		return 0
	}
	return float64(s.Bytes) / float64(s.Readings)
}

// Storage sums the sizes and record counts of the data files of t's current
// snapshot, as its manifests record them.
func (c *Tier) Storage(ctx context.Context, t *Table) (Storage, error) {
	ice, err := c.load(ctx, t)
	if err != nil {
		return Storage{}, err
	}
	tasks, err := ice.Scan().PlanFiles(ctx)
	if err != nil {
		return Storage{}, fmt.Errorf("cold: storage of %s: %w", t.decl.Name, err)
	}
	var s Storage
	for _, task := range tasks {
		s.Files++
		s.Bytes += task.File.FileSizeBytes()
		s.Readings += task.File.Count()
	}
	return s, nil
}

// BytesPerReading returns the stored bytes per reading of t: the size of
// its data files over their record count.
func (c *Tier) BytesPerReading(ctx context.Context, t *Table) (float64, error) {
	s, err := c.Storage(ctx, t)
	return s.BytesPerReading(), err
}

package config

import (
	"slices"

	"github.com/meterstore/meterstore/series"
)

// Tables returns the declared tables, in file order. They are copies: the
// caller may change them without changing c.
func (c *Config) Tables() []series.Table {
	out := make([]series.Table, len(c.tables))
	for i, t := range c.tables {
		t.Resolutions = slices.Clone(t.Resolutions)
		t.Columns = slices.Clone(t.Columns)
		for j := range t.Columns {
			t.Columns[j].Values = slices.Clone(t.Columns[j].Values)
		}
		out[i] = t
	}
	return out
}

package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// rawTable is the shape of a [[table]] section.
type rawTable struct {
	Name        value       `toml:"name"`
	TimeModel   value       `toml:"time_model"`
	Commodity   value       `toml:"commodity"`
	Resolutions value       `toml:"resolutions"`
	Width       value       `toml:"width"`
	Headroom    value       `toml:"headroom"`
	Integrity   value       `toml:"integrity"`
	Exclusion   value       `toml:"exclusion"` // before integrity: false is "write", true "exclusion"
	Provenance  value       `toml:"provenance"`
	Column      []rawColumn `toml:"column"`
}

// rawColumn is the shape of a [[table.column]] section.
type rawColumn struct {
	Name     value `toml:"name"`
	Type     value `toml:"type"`
	Identity value `toml:"identity"`
	Values   value `toml:"values"`
}

// table reads the [[table]] section at key.
func (r *reader) table(key string, raw *rawTable) series.Table {
	t := series.Table{TimeModel: series.Interval, Width: series.Daily}
	t.Name = r.required(key+".name", raw.Name)
	switch s := r.str(key+".time_model", raw.TimeModel, "interval"); s {
	case "interval":
	case "point":
		t.TimeModel = series.Point
	default:
		r.errorf(key+".time_model", "%q: want \"interval\" or \"point\"", s)
	}
	if s := r.str(key+".commodity", raw.Commodity, ""); s != "" {
		var err error
		if t.Commodity, err = metering.ParseCommodity(s); err != nil {
			r.errorf(key+".commodity", "%q: want %s", s, oneOf(metering.Spellings(metering.Commodities())))
		}
	}
	for _, s := range r.strs(key+".resolutions", raw.Resolutions) {
		res, err := metering.ParseResolution(s)
		switch {
		case err != nil:
			r.errorf(key+".resolutions", "%q: want %s", s, oneOf(metering.Spellings(metering.Resolutions())))
		case slices.Contains(t.Resolutions, res):
			r.errorf(key+".resolutions", "%s is listed twice", s)
		default:
			t.Resolutions = append(t.Resolutions, res)
		}
	}
	if t.TimeModel == series.Point && len(t.Resolutions) > 0 {
		r.errorf(key+".resolutions", "a point table has no resolutions: its rows name an instant, not an interval")
	}
	switch s := r.str(key+".width", raw.Width, "daily"); s {
	case "daily":
	case "monthly":
		t.Width = series.Monthly
	default:
		r.errorf(key+".width", "%q: want \"daily\" or \"monthly\"", s)
	}
	t.Headroom = r.duration(key+".headroom", raw.Headroom, defaultHeadroom, "d")
	if most := maxHeadroom(t.Width); t.Headroom > most && r.ok(key+".headroom", key+".width") {
		r.errorf(key+".headroom", "%v: want at most %v for %s partitions; every cycle keeps that many ahead",
			Duration(t.Headroom), Duration(most), t.Width)
	}
	t.Integrity = r.integrity(key, raw)
	for j := range raw.Column {
		t.Columns = append(t.Columns, r.column(fmt.Sprintf("%s.column[%d]", key, j), &raw.Column[j]))
	}
	if r.boolean(key+".provenance", raw.Provenance, false) {
		// The columns a section declares itself stay as declared, in
		// its order; Validate says if they cannot record provenance.
		for _, c := range series.ProvenanceColumns() {
			if !slices.ContainsFunc(t.Columns, func(d series.Column) bool { return d.Name == c.Name }) {
				t.Columns = append(t.Columns, c)
			}
		}
	}
	return t
}

// integrity reads integrity, or the older exclusion, of the [[table]]
// section at key. Neither leaves the choice to the hot tier.
func (r *reader) integrity(key string, raw *rawTable) series.Integrity {
	if raw.Exclusion.set {
		if raw.Integrity.set {
			r.errorf(key+".exclusion", "set integrity or exclusion (its older spelling), not both")
			return series.IntegrityAuto
		}
		if r.boolean(key+".exclusion", raw.Exclusion, true) {
			return series.IntegrityExclusion
		}
		return series.IntegrityWrite
	}
	s := r.str(key+".integrity", raw.Integrity, "auto")
	i, err := series.ParseIntegrity(s)
	if err != nil {
		r.errorf(key+".integrity", "%v", err)
	}
	return i
}

// column reads the [[table.column]] section at key.
func (r *reader) column(key string, raw *rawColumn) series.Column {
	c := series.Column{Name: r.required(key+".name", raw.Name), Type: series.Text}
	switch s := r.str(key+".type", raw.Type, "text"); s {
	case "text":
	case "bigint":
		c.Type = series.BigInt
	default:
		r.errorf(key+".type", "%q: want \"text\" or \"bigint\"", s)
	}
	c.Identity = r.boolean(key+".identity", raw.Identity, false)
	c.Values = r.strs(key+".values", raw.Values)
	return c
}

// required returns the string at key, which must be present.
func (r *reader) required(key string, v value) string {
	if !v.set {
		r.errorf(key, "required")
		return ""
	}
	return r.str(key, v, "")
}

// checkTable checks the table at key with hot.Table.Validate, split so
// that each problem names the key it is about: the table without its
// columns (its name), then each column alone (its name and type, then its
// coded values). Keys already found wrong are left out, so that hot does
// not repeat what was reported.
func (r *reader) checkTable(key string, t series.Table) {
	if !r.ok(key + ".name") {
		return
	}
	bare := t
	bare.Columns = nil
	if !r.ok(key + ".resolutions") {
		bare.Resolutions = nil
	}
	if bare.Integrity == series.IntegrityStatement && !bare.StatementCapable() && r.ok(key+".resolutions", key+".time_model") {
		r.errorf(key+".integrity", "%q needs an interval table of one resolution of fixed length; use %q", series.IntegrityStatement, series.IntegrityExclusion)
		bare.Integrity = series.IntegrityAuto
	}
	if err := bare.Validate(); err != nil {
		r.errorf(key+".name", "%v", reason(err))
		return
	}
	seen := map[string]bool{}
	for j, c := range t.Columns {
		ck := fmt.Sprintf("%s.column[%d]", key, j)
		if !r.ok(ck) {
			continue
		}
		one := bare
		one.Columns = []series.Column{{Name: c.Name, Type: c.Type, Identity: c.Identity}}
		if err := one.Validate(); err != nil {
			r.errorf(ck+".name", "%v", reason(err))
			continue
		}
		if seen[c.Name] {
			r.errorf(ck+".name", "column %q is declared twice", c.Name)
			continue
		}
		seen[c.Name] = true
		one.Columns[0].Values = c.Values
		if err := one.Validate(); err != nil {
			r.errorf(ck+".values", "%v", reason(err))
		}
	}
	if !r.ok(key) {
		return
	}
	if err := t.Validate(); err != nil {
		r.errorf(key, "%v", reason(err))
	}
}

// reason returns what a hot.Error says is wrong, without its operation.
func reason(err error) error {
	var he *series.Error
	if errors.As(err, &he) && he.Err != nil {
		return he.Err
	}
	return err
}

// oneOf lists choices as "A, B or C".
func oneOf(choices []string) string {
	if len(choices) < 2 {
		return strings.Join(choices, "")
	}
	return strings.Join(choices[:len(choices)-1], ", ") + " or " + choices[len(choices)-1]
}

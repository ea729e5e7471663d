package rollup

import (
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// Summary keys of a rollup snapshot: the source table's snapshot whose
// settled days it reflects, and that snapshot's watermark. Days ending at
// or before the watermark are in the rollup; later ones are not.
const (
	SummarySourceSnapshot = "meterstore.source-snapshot-id"
	SummaryWatermark      = "meterstore.watermark"
)

// QualityColumn returns the name of the column counting the intervals of
// quality q, such as quality_220 or quality_z18.
func QualityColumn(q metering.Quality) string { return "quality_" + strings.ToLower(q.String()) }

// Schema returns the Iceberg schema of the rollup of a declared interval
// table: the series (malo_id, obis_code, the identity columns), the day
// and what the query relation daily shows of it, and rollup_version. A
// reader takes, per series and balancing_day, the rows of the highest
// rollup_version.
func Schema(t *series.Table) *iceberg.Schema {
	var fields []iceberg.NestedField
	add := func(name string, typ iceberg.Type, required bool, doc string) {
		fields = append(fields, iceberg.NestedField{ID: len(fields) + 1, Name: name, Type: typ, Required: required, Doc: doc})
	}
	str, long, ts := iceberg.PrimitiveTypes.String, iceberg.PrimitiveTypes.Int64, iceberg.PrimitiveTypes.TimestampTz
	add("malo_id", str, true, "market location id (MaLo)")
	add("obis_code", str, true, "OBIS code")
	for _, c := range t.Columns {
		if c.Identity {
			typ := iceberg.Type(str)
			if c.Type == series.BigInt {
				typ = long
			}
			add(c.Name, typ, true, "identity column")
		}
	}
	add("balancing_day", iceberg.PrimitiveTypes.Date, true, "Berlin day, or the gas day for gas")
	add("sparte", str, true, "commodity (Sparte)")
	add("resolution", str, true, "ISO 8601 duration of the intervals")
	add("unit", str, true, "unit of value")
	add("from", ts, true, "where the balancing day begins")
	add("to", ts, true, "where it ends")
	add("expected", long, false, "intervals the calendar expects; null for a resolution coarser than a day")
	add("present", long, true, "intervals of the day, versions resolved")
	add("on_grid", long, true, "those on the resolution's grid within the day, which completeness counts")
	add("value_sum", iceberg.DecimalTypeOf(38, 6), true, "sum of their values")
	for _, q := range metering.Qualities() {
		add(QualityColumn(q), long, true, "intervals of quality "+q.String())
	}
	add("max_version", iceberg.DecimalTypeOf(20, 0), true, "highest version among them")
	add("max_recorded_at", ts, true, "latest recorded_at among them")
	add("rollup_version", long, true, "the source snapshot's sequence number: the highest of a series' day holds")
	return iceberg.NewSchema(0, fields...)
}

package cold

import (
	"fmt"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/meterstore/meterstore/series"
)

// Types of the columns whose Iceberg type is not a plain primitive.
var (
	valueType   = iceberg.DecimalTypeOf(18, 6) // numeric(18,6) in the hot tier
	versionType = iceberg.DecimalTypeOf(20, 0) // numeric(20,0): MSCONS versions have 14 digits and more
)

// Schema returns the Iceberg schema of a declared table. Field ids are
// assigned in column order from 1: the built-in columns first, in a fixed
// order, then the extra columns as declared. That is the order Iceberg
// assigns fresh ids in, so the ids a new table gets are these.
func Schema(t *series.Table) *iceberg.Schema {
	var (
		fields []iceberg.NestedField
		key    []int
	)
	add := func(name string, typ iceberg.Type, required bool, doc string) int {
		id := len(fields) + 1
		fields = append(fields, iceberg.NestedField{ID: id, Name: name, Type: typ, Required: required, Doc: doc})
		return id
	}
	str := iceberg.PrimitiveTypes.String
	ts := iceberg.PrimitiveTypes.TimestampTz
	key = append(key, add("malo_id", str, true, "market location id (MaLo)"))
	add("melo_id", str, false, "metering location id (MeLo)")
	key = append(key, add("obis_code", str, true, "OBIS code"))
	add("sparte", str, true, "commodity (Sparte)")
	key = append(key, add("from", ts, true, "interval start, or the instant of a point reading"))
	if t.TimeModel == series.Interval {
		add("to", ts, true, "interval end, exclusive")
	}
	add("value", valueType, true, "the metered value")
	add("unit", str, true, "unit of value")
	add("quality", str, true, "MSCONS quality code")
	if t.TimeModel == series.Interval {
		add("resolution", str, true, "ISO 8601 duration of the interval")
	}
	version := add("version", versionType, true, "version; the highest wins, then the latest recorded_at")
	add("version_scope", str, true, "network operator id : balancing month, within which versions compare")
	add("recorded_at", ts, true, "transaction time of the write")
	add("balancing_day", iceberg.PrimitiveTypes.Date, true, "Berlin day of from, or the gas day for gas: group by it")
	add("subject_id", str, false, "pseudonymous reference to the data subject")
	for _, c := range t.Columns {
		typ := iceberg.Type(str)
		if c.Type == series.BigInt {
			typ = iceberg.PrimitiveTypes.Int64
		}
		kind := "attribute"
		if c.Identity {
			kind = "identity"
		}
		id := add(c.Name, typ, c.Identity, "declared "+kind+" column")
		if c.Identity {
			key = append(key, id)
		}
	}
	// Last, so that the ids of the declared columns do not depend on it.
	add(series.ColumnSuperseded, iceberg.PrimitiveTypes.Bool, false, supersededDoc)
	// The identifier fields are the primary key: the merge key and version.
	return iceberg.NewSchemaWithIdentifiers(0, append(key, version), fields...)
}

// supersededDoc tells a foreign reader what the superseded column means.
const supersededDoc = "true: a later version of the merge key was archived with this one; false: the newest version when archived; " +
	"null: not decided at archival (a late correction, or a file older than the column): resolve these rows and the false ones of their merge keys"

// mergeKey returns the names of the merge key's columns.
func mergeKey(t *series.Table) []string {
	k := []string{"malo_id", "obis_code", "from"}
	for _, c := range t.Columns {
		if c.Identity {
			k = append(k, c.Name)
		}
	}
	return k
}

// partitionSpec returns month(from), then identity(c) for every identity
// column: readings of different series never share a file; then
// identity(superseded): the versions archival found superseded are kept
// apart from the current ones and from late corrections, so that a
// resolved read, MeterStore's or a foreign engine's filtering on the
// column, skips their files.
func partitionSpec(t *series.Table, sc *iceberg.Schema) (iceberg.PartitionSpec, error) {
	from, ok := sc.FindFieldByName("from")
	if !ok {
		return iceberg.PartitionSpec{}, fmt.Errorf("cold: schema of %s has no column \"from\"", t.Name)
	}
	fields := []iceberg.PartitionField{{SourceIDs: []int{from.ID}, FieldID: 1000, Name: "from_month", Transform: iceberg.MonthTransform{}}}
	for _, c := range t.Columns {
		if !c.Identity {
			continue
		}
		f, ok := sc.FindFieldByName(c.Name)
		if !ok {
			return iceberg.PartitionSpec{}, fmt.Errorf("cold: schema of %s has no column %q", t.Name, c.Name)
		}
		fields = append(fields, iceberg.PartitionField{SourceIDs: []int{f.ID}, FieldID: 1000 + len(fields), Name: c.Name, Transform: iceberg.IdentityTransform{}})
	}
	sup, ok := sc.FindFieldByName(series.ColumnSuperseded)
	if !ok {
		return iceberg.PartitionSpec{}, fmt.Errorf("cold: schema of %s has no column %q", t.Name, series.ColumnSuperseded)
	}
	fields = append(fields, iceberg.PartitionField{SourceIDs: []int{sup.ID}, FieldID: 1000 + len(fields), Name: series.ColumnSuperseded, Transform: iceberg.IdentityTransform{}})
	return iceberg.NewPartitionSpec(fields...), nil
}

// sortOrder returns malo_id, from, both ascending: a scan for one market
// location reads few pages.
func sortOrder(sc *iceberg.Schema) (table.SortOrder, error) {
	var fields []table.SortField
	for _, name := range []string{"malo_id", "from"} {
		f, ok := sc.FindFieldByName(name)
		if !ok {
			return table.SortOrder{}, fmt.Errorf("cold: schema has no column %q", name)
		}
		fields = append(fields, table.SortField{SourceIDs: []int{f.ID}, Transform: iceberg.IdentityTransform{},
			Direction: table.SortASC, NullOrder: table.NullsFirst})
	}
	return table.NewSortOrder(table.InitialSortOrderID, fields)
}

// Properties the Tier sets on its tables. PropMergeKey tells a foreign engine
// which columns version resolution partitions by.
const (
	PropMergeKey  = "meterstore.merge-key"
	PropTimeModel = "meterstore.time-model"
)

// bloomColumns are the columns a point lookup filters on whose bloom filter
// buys something: a file's malo_id spans many market locations, and a
// superseded file holds few of those in its min/max range. obis_code has
// none: a table's files hold one or a few codes, which the column's
// statistics already prune.
var bloomColumns = []string{"malo_id"}

// droppedProperties are properties the Tier once set and now removes:
// write.parquet.page-version "2" is iceberg-go's spelling, which Iceberg's
// Java writer refuses ("v2"), so no Spark could write the table; iceberg-go
// writes version 2 pages without it. The obis_code bloom filter cost
// BloomBytes a row group and pruned nothing (see bloomColumns).
var droppedProperties = map[string]string{
	table.ParquetPageVersionKey:                                   "2",
	table.ParquetBloomFilterColumnEnabledKeyPrefix + ".obis_code": "true",
}

// writeProperties returns the table properties that shape the files the
// Tier writes. No history.expire.* property is among them: snapshot
// retention is the Tier's (see ExpireSnapshots), not the table's. Each
// commit deletes the metadata file that drops out of the metadata log (the
// 100 before the current one): a table committed to daily for ten years
// would otherwise keep thousands of them, which nothing reads.
func (o Options) writeProperties(t *series.Table) iceberg.Properties {
	p := iceberg.Properties{
		table.MetadataDeleteAfterCommitEnabledKey: "true",
		table.ParquetCompressionKey:               "zstd",
		table.ParquetCompressionLevelKey:          fmt.Sprint(o.ZstdLevel),
		table.ParquetRowGroupLimitKey:             fmt.Sprint(o.RowGroupRows),
		table.ParquetRowGroupSizeBytesKey:         fmt.Sprint(o.RowGroupBytes),
		table.WriteTargetFileSizeBytesKey:         fmt.Sprint(o.TargetFileSize),
		table.ParquetBloomFilterMaxBytesKey:       fmt.Sprint(o.BloomBytes),
		PropMergeKey:                              strings.Join(mergeKey(t), ","),
		PropTimeModel:                             t.TimeModel.String(),
	}
	for _, c := range bloomColumns {
		p[table.ParquetBloomFilterColumnEnabledKeyPrefix+"."+c] = "true"
	}
	return p
}

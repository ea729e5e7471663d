// Package cold is the Iceberg tier of MeterStore: settled readings, below
// the watermark, as Parquet files in one Iceberg table (format version 2)
// per declared table.
//
// The watermark W rides in the snapshot summary under SummaryWatermark,
// committed in the same catalog compare-and-set as the data it covers, so
// the boundary and the rows below it can never disagree. WatermarkCheck,
// installed as the meterstore catalog's commit check, refuses every commit
// that would move W backwards, on iceberg-go's retries too.
//
// A Tier writes through any iceberg-go catalog: the meterstore catalog, whose
// log lives in PostgreSQL or on object storage, or iceberg-go's own SQL and
// REST catalogs. Only the meterstore catalog runs the commit check inside its
// compare-and-set; with the others the Tier checks W before it commits,
// which a concurrent committer can race.
package cold

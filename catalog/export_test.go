package catalog

// Names the readings view shares with the cold tier, for a test that holds
// them equal to the cold tier's.
const (
	MergeKeyProperty = mergeKeyProperty
	WatermarkSummary = watermarkSummary
	SupersededColumn = supersededColumn
)

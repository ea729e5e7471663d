package series

import "slices"

// The provenance columns: where a reading came from. A table declares
// either or both as text attribute columns (the configuration's
// provenance = true declares both). They record a delivery, not a
// statement of the reading, so they take no part in the restated-value
// comparison (Restated): an identical reading delivered again from another
// file is present, and the stored row keeps the provenance of its first
// delivery.
const (
	// ColumnSourceKind names the kind of source: SourceMSCONS,
	// SourceCSV, SourceJSON or SourceAPI.
	ColumnSourceKind = "source_kind"
	// ColumnSourceRef names the delivery within its kind: a file name, a
	// caller's reference, or an MSCONS interchange reference and message
	// reference as "<UNB reference>:<UNH reference>".
	ColumnSourceRef = "source_ref"
)

// The kinds of source recorded in ColumnSourceKind.
const (
	SourceMSCONS = "mscons" // an EDIFACT MSCONS interchange
	SourceCSV    = "csv"    // a CSV file
	SourceJSON   = "json"   // a file of JSON lines
	SourceAPI    = "api"    // a CSV or JSON body sent to serve's HTTP API
)

// ProvenanceColumns returns the declarations of the provenance columns, as
// provenance = true declares them.
func ProvenanceColumns() []Column {
	return []Column{{Name: ColumnSourceKind, Type: Text}, {Name: ColumnSourceRef, Type: Text}}
}

// Provenance reports whether c is a provenance column.
func (c Column) Provenance() bool {
	return c.Name == ColumnSourceKind || c.Name == ColumnSourceRef
}

// Provenance reports whether t declares a provenance column.
func (t *Table) Provenance() bool {
	return slices.ContainsFunc(t.Columns, Column.Provenance)
}

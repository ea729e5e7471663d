package series

import "fmt"

// A Status says what a write did with one row.
type Status uint8

// The row statuses.
const (
	// Inserted rows were new and are now stored.
	Inserted Status = iota + 1
	// Present rows were stored already, identically, or repeat an earlier
	// row of the same batch: redelivery is a no-op.
	Present
)

// String returns "inserted" or "present".
func (s Status) String() string {
	switch s {
	case Inserted:
		return "inserted"
	case Present:
		return "present"
	}
	return fmt.Sprintf("Status(%d)", s)
}

// A Result reports the outcome of a successful write.
type Result struct {
	Status   []Status // one per row of the batch, in order
	Inserted int      // rows with status Inserted
	Present  int      // rows with status Present
}

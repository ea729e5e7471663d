package series

import "fmt"

// A Status says what a write did with one row.
type Status uint8

// The row statuses. The winner of a merge key is its highest version,
// whatever the order of arrival; the status says how a row relates to the
// versions stored before it.
const (
	// Inserted rows were new to their merge key and are now stored.
	Inserted Status = iota + 1
	// Present rows were stored already, identically, or repeat an earlier
	// row of the same batch: redelivery is a no-op.
	Present
	// Superseded rows are stored and win over the lower versions of their
	// merge key stored before them.
	Superseded
	// Shadowed rows are stored, but a higher version of their merge key
	// was stored before them and still wins.
	Shadowed
	// Refused rows were named by the error that refused their batch, with
	// the reason (Error.Problems); nothing of the batch was written.
	Refused
)

// String returns "inserted", "present", "superseded", "shadowed" or
// "refused".
func (s Status) String() string {
	switch s {
	case Inserted:
		return "inserted"
	case Present:
		return "present"
	case Superseded:
		return "superseded"
	case Shadowed:
		return "shadowed"
	case Refused:
		return "refused"
	}
	return fmt.Sprintf("Status(%d)", s)
}

// A Result reports the outcome of a write.
type Result struct {
	Status     []Status // one per row of the batch, in order
	Inserted   int      // rows with status Inserted
	Present    int      // rows with status Present
	Superseded int      // rows with status Superseded
	Shadowed   int      // rows with status Shadowed
	Refused    int      // rows with status Refused
	// Versions, for a write of substitute values, holds per row the
	// version the write gave it (the next of its reading); zero for a
	// row repeating an earlier one of the batch. Nil for other writes.
	Versions []uint64
}

// Tally returns the Result of the statuses, counted.
func Tally(status []Status) Result {
	r := Result{Status: status}
	for _, s := range status {
		r.Count(s)
	}
	return r
}

// Count adds one row of status s to the counts of r.
func (r *Result) Count(s Status) {
	switch s {
	case Inserted:
		r.Inserted++
	case Present:
		r.Present++
	case Superseded:
		r.Superseded++
	case Shadowed:
		r.Shadowed++
	case Refused:
		r.Refused++
	}
}

// Add adds the counts of o to those of r.
func (r *Result) Add(o Result) {
	r.Inserted += o.Inserted
	r.Present += o.Present
	r.Superseded += o.Superseded
	r.Shadowed += o.Shadowed
	r.Refused += o.Refused
}

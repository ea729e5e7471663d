package archive

import "github.com/meterstore/meterstore/internal/cold"

// ErrColdUnreachable is wrapped by the retryable error of a write or an
// archival that needs the cold tier while its warehouse or catalog cannot
// be reached (see cold.Unavailable). Nothing of the refused part was
// written; retrying once the warehouse is back succeeds. It is
// cold.ErrUnreachable, the one sentinel of every tier.
var ErrColdUnreachable = cold.ErrUnreachable

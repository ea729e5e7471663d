package hot

import (
	"errors"

	"github.com/meterstore/meterstore/internal/pgerr"
)

// ErrDeferred is wrapped by the Unavailable error of a DDL statement that
// could not get its lock within the DDL lock timeout. The statement changed
// nothing; a later attempt may succeed. Callers that schedule DDL treat it as
// a benign no-op and report it as "deferred".
var ErrDeferred = errors.New("deferred: lock not available within the DDL lock timeout")

// ErrUndeclaredValues is wrapped by the Unavailable error of a Detach
// refused because the partition holds values in a column the caller's
// declaration lacks, such as a column a newer process of a rolling
// upgrade declared and wrote: nothing changed, and a process that
// declares the column archives the partition. Callers that schedule
// archival treat it as a benign no-op, as they do ErrDeferred.
var ErrUndeclaredValues = errors.New("deferred: the partition holds values in a column this declaration lacks")

// classify wraps a failure of the server or the connection in a
// *series.Error; one passes through unchanged.
func classify(op, table string, err error) error { return pgerr.Classify(op, table, err) }

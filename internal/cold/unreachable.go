package cold

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"syscall"

	icecatalog "github.com/apache/iceberg-go/catalog"
	"github.com/meterstore/meterstore/blob"
	"github.com/meterstore/meterstore/internal/pgerr"
	"github.com/meterstore/meterstore/series"
)

// Unreachable reports whether err, from the cold tier, says that the
// warehouse or the catalog could not be reached, rather than that what it
// holds is wrong: a missing root or object, a refused permission, an I/O
// or network failure, a deadline, an HTTP request to the object store
// that failed in transport (*url.Error: refused, reset, EOF before the
// answer), a read cut short (the connection lost mid-body; a data file
// truncated in the warehouse is refused by its size first, as an
// *AlteredFileError). A table the catalog does not find counts too, as
// does a namespace: the tables asked about were ensured when the store
// opened them, and a log on object storage whose bucket is away reads as
// empty. A refusal the tier classified itself (a *series.Error,
// a quarantine for a schema it read, a file not the one its commit
// recorded) is not.
func Unreachable(err error) bool {
	var se *series.Error
	var q *QuarantineError
	var altered *AlteredFileError
	switch {
	case err == nil, errors.As(err, &se), errors.As(err, &altered):
		return false
	case errors.As(err, &q):
		return q.Err != nil && Unreachable(q.Err)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return true
	}
	var pe *fs.PathError
	if errors.As(err, &pe) && pe.Op == "mkdir" && errors.Is(pe.Err, syscall.EEXIST) {
		// A file stands where the warehouse has a directory: MkdirAll
		// says ENOTDIR, or EEXIST when the file appeared between its
		// look and its mkdir.
		return true
	}
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, icecatalog.ErrNoSuchTable) || errors.Is(err, icecatalog.ErrNoSuchNamespace) || errors.Is(err, fs.ErrPermission) || errors.Is(err, blob.ErrNotFound) ||
		errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.EIO) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, context.DeadlineExceeded) || pgerr.Network(err)
}

// Unavailable returns err as a retryable Unavailable error of operation op
// on table that wraps ErrUnreachable, when it says the cold tier is
// unreachable (see Unreachable), and unchanged otherwise.
func Unavailable(op, table string, err error) error {
	if !Unreachable(err) {
		return err
	}
	return &series.Error{Kind: series.Unavailable, Op: op, Table: table, Err: fmt.Errorf("%w: %w", ErrUnreachable, err)}
}

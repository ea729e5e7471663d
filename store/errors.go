package store

import (
	"context"
	"errors"
	"net"

	"github.com/meterstore/meterstore/consensus"
	"github.com/meterstore/meterstore/internal/hot"
	"github.com/meterstore/meterstore/internal/pgcluster"
	"github.com/meterstore/meterstore/privacy"
)

// IsRetryable reports whether err may go away when the operation is tried
// again unchanged: a lock not had in time, a private server busy with
// another command, a lost connection, a log write whose outcome is
// unknown, a timeout. Writes are idempotent, so retrying
// one after such an error is safe. A refused delivery, an invalid
// configuration and an invariant violation are not retryable.
func IsRetryable(err error) bool {
	if err == nil {
		return false
	}
	var ne net.Error
	return hot.IsRetryable(err) || privacy.IsRetryable(err) ||
		consensus.IsRetryable(err) || consensus.IsIndeterminate(err) || errors.Is(err, pgcluster.ErrBusy) ||
		errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne)
}

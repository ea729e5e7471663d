package archive

import (
	"fmt"
	"io"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/meterstore/meterstore/series"
)

// TestLedgerFailedClassified: a connection to PostgreSQL lost under a
// statement on the ledger, as pgx reports it (an unexpected EOF, no
// SQLSTATE), is worth retrying, so that a query of both tiers during it
// answers 503, not 500 (TestServeNetworkFaults met it); a refusal by the
// server with a code that no retry mends is not.
func TestLedgerFailedClassified(t *testing.T) {
	lost := ledgerFailed("power", fmt.Errorf("read: %w", io.ErrUnexpectedEOF))
	if !series.IsRetryable(lost) {
		t.Errorf("%v: not retryable", lost)
	}
	denied := ledgerFailed("power", &pgconn.PgError{Code: "42501", Message: "permission denied"})
	if series.IsRetryable(denied) {
		t.Errorf("%v: retryable", denied)
	}
	t.Log(lost)
}

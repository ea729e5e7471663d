package apierror

import (
	"context"
	"fmt"
	"testing"

	"github.com/meterstore/meterstore/store"
)

// TestQuery: the errors of a query and how a client is told them.
func TestQuery(t *testing.T) {
	canceled, cancel := context.WithCancel(t.Context())
	cancel()
	for _, tc := range []struct {
		ctx  context.Context
		err  error
		kind Kind
		code string
	}{
		{t.Context(), fmt.Errorf("%w: 3 statements", store.ErrNotReadOnly), NotReadOnly, "not_read_only"},
		{t.Context(), fmt.Errorf("%w: Binder Error: Referenced column x not found", store.ErrInvalidQuery), InvalidQuery, "invalid_query"},
		{t.Context(), fmt.Errorf("%w: Invalid Input Error: x", store.ErrInvalidQuery), InvalidQuery, "invalid_query"},
		{t.Context(), fmt.Errorf("wrapped: %w", &store.ForbiddenError{Tables: []string{"power"}}), Forbidden, "forbidden"},
		{t.Context(), fmt.Errorf("%w: Permission Error: file system operations are disabled", store.ErrNotPermitted), NotPermitted, "not_permitted"},
		{t.Context(), fmt.Errorf("%w after 1s: %w", store.ErrQueryTimeout, context.DeadlineExceeded), Timeout, "timeout"},
		{t.Context(), fmt.Errorf("%w: Out of Memory Error", store.ErrMemoryLimit), MemoryLimit, "memory_limit"},
		{t.Context(), fmt.Errorf("x: %w", store.ErrNoTable), NotFound, "not_found"},
		{t.Context(), fmt.Errorf("%w: column s holds 100000000 bytes", store.ErrResultTooLarge), TooLarge, "too_large"},
		{t.Context(), fmt.Errorf("%w: %w", store.ErrColdUnreachable, fmt.Errorf("file x: %w", store.ErrAlteredFile)), Altered, "altered_file"},
		{t.Context(), fmt.Errorf("%w: %w", store.ErrColdUnreachable, &store.AlteredFileError{Table: "power", File: "f.parquet", Missing: true}), Altered, "missing_file"},
		{t.Context(), fmt.Errorf("query: %w", store.ErrInFlight), Unavailable, "unavailable"},
		{canceled, fmt.Errorf("query: %w", context.Canceled), Canceled, "canceled"},
		{t.Context(), fmt.Errorf("binder error"), Internal, "internal"},
	} {
		f := Query(tc.ctx, tc.err)
		if f.Kind != tc.kind || f.Code != tc.code || f.Message == "" {
			t.Errorf("%v: %+v; want kind %d code %s", tc.err, f, tc.kind, tc.code)
		}
		if f.Client() != (tc.kind != Internal && tc.kind != Altered) {
			t.Errorf("%v: Client() = %v", tc.err, f.Client())
		}
		if tc.kind == Internal && f.Message != "internal error" {
			t.Errorf("%v: an internal error answers %q", tc.err, f.Message)
		}
	}
}

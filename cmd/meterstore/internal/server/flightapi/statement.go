package flightapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/meterstore/meterstore/cmd/meterstore/internal/server/apierror"
	"github.com/meterstore/meterstore/cmd/meterstore/internal/server/auth"
	"github.com/meterstore/meterstore/internal/arrowrows"
	"github.com/meterstore/meterstore/internal/metrics"
	"github.com/meterstore/meterstore/store"
)

// prepare analyses sql for the call's token as the store runs it, passed
// through as the client sent it: every table is a db_schema
// (power.readings, meterstore.gas.completeness), there is no default
// table, and a statement that reads a table the token may not read is
// refused having read nothing.
func (s *server) prepare(ctx context.Context, sql string, params []any) (Statement, error) {
	if strings.TrimSpace(sql) == "" {
		return nil, status.Error(codes.InvalidArgument, "the statement is empty")
	}
	mode, err := modeOf(ctx)
	if err != nil {
		return nil, err
	}
	tok := tokenOf(ctx)
	return s.s.Prepare(ctx, sql, store.StatementOptions{Params: params, Read: store.ReadOptions{Mode: mode},
		May: func(t string) bool { return auth.MayTouch(tok, t) }})
}

// ModeHeader is the gRPC header that chooses the tiers a call's statement
// reads: auto (none), historical or operational.
const ModeHeader = "x-meterstore-mode"

// modeOf returns the read mode the call's ModeHeader asks for.
func modeOf(ctx context.Context) (store.ReadMode, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	vals := md.Get(ModeHeader)
	if len(vals) == 0 {
		return store.ReadAuto, nil
	}
	m, err := store.ParseReadMode(vals[len(vals)-1])
	if err != nil {
		return m, status.Errorf(codes.InvalidArgument, "%s %q: auto, historical or operational", ModeHeader, vals[len(vals)-1])
	}
	return m, nil
}

// check prepares sql as DoGet will and releases it: a statement DoGet
// would refuse is refused before it gets a ticket.
func (s *server) check(ctx context.Context, sql string) error {
	st, err := s.prepare(ctx, sql, nil)
	if err != nil {
		return s.failure(ctx, err, []slog.Attr{slog.String("token", tokenOf(ctx).Name)})
	}
	st.Close()
	return nil
}

// ticketInfo is the FlightInfo of a statement: one endpoint, on this
// server, whose ticket is tkt. The schema is not known before the
// statement runs, and the statement runs once, in DoGet.
func ticketInfo(desc *flight.FlightDescriptor, tkt []byte) *flight.FlightInfo {
	return &flight.FlightInfo{
		FlightDescriptor: desc,
		Endpoint:         []*flight.FlightEndpoint{{Ticket: &flight.Ticket{Ticket: tkt}}},
		TotalRecords:     -1,
		TotalBytes:       -1,
	}
}

// GetFlightInfoStatement checks the statement's naming and token, and
// returns a ticket holding the statement: DoGet checks and runs it.
func (s *server) GetFlightInfoStatement(ctx context.Context, cmd flightsql.StatementQuery, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	if len(cmd.GetTransactionId()) > 0 {
		return nil, status.Error(codes.InvalidArgument, "transactions are not supported: every statement reads a snapshot of its own")
	}
	if err := s.check(ctx, cmd.GetQuery()); err != nil {
		return nil, err
	}
	tkt, err := flightsql.CreateStatementQueryTicket([]byte(cmd.GetQuery()))
	if err != nil {
		return nil, status.Errorf(codes.Internal, "a ticket: %v", err)
	}
	return ticketInfo(desc, tkt), nil
}

// DoGetStatement runs the statement of a ticket, which the client holds
// and so is checked again.
func (s *server) DoGetStatement(ctx context.Context, tkt flightsql.StatementQueryTicket) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	return s.run(ctx, string(tkt.GetStatementHandle()), nil)
}

// run streams sql, once for each set of parameter values of sets (once
// without parameters if there is none), the rows of every run one after
// the other under the first run's schema: it returns once the store has
// the first result's header, and sends the rows in batches on the
// channel, which it closes at the end. ctx, the DoGet stream's, bounds
// the query: the client's cancel or disconnect ends it.
func (s *server) run(ctx context.Context, sql string, sets [][]any) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	if len(sets) == 0 {
		sets = [][]any{nil}
	}
	if s.slots != nil {
		select {
		case s.slots <- struct{}{}:
		default:
			return nil, nil, status.Errorf(codes.ResourceExhausted,
				"%d queries are in flight, as many as server.max_concurrent_requests allows: retry shortly", cap(s.slots))
		}
	}
	start := time.Now()
	attrs := []slog.Attr{slog.String("token", tokenOf(ctx).Name)}
	st, err := s.prepare(ctx, sql, sets[0])
	if err != nil {
		if s.slots != nil {
			<-s.slots
		}
		return nil, nil, s.failure(ctx, err, append(attrs, slog.Duration("took", time.Since(start))))
	}
	ch := make(chan flight.StreamChunk, 1)
	header := make(chan *arrow.Schema, 1)
	failed := make(chan error, 1)
	attrs = append(attrs, slog.String("tables", strings.Join(st.Tables(), ",")))
	go func() {
		if s.slots != nil {
			defer func() { <-s.slots }()
		}
		defer close(ch)
		var (
			b    *arrowrows.Builder
			rows int64
		)
		send := func() error {
			rec := b.NewBatch()
			select {
			case ch <- flight.StreamChunk{Data: rec}:
				return nil
			case <-ctx.Done():
				rec.Release()
				return ctx.Err()
			}
		}
		var first *store.ResultHeader
		begin := func(hd *store.ResultHeader) error {
			if first != nil {
				// A later parameter set's run: its rows join the first's.
				if !slices.Equal(hd.Columns, first.Columns) || !slices.Equal(hd.Types, first.Types) {
					return status.Errorf(codes.InvalidArgument, "the parameter sets give results of other columns: %v (%v), then %v (%v)",
						first.Columns, first.Types, hd.Columns, hd.Types)
				}
				return nil
			}
			first = hd
			wm, tiers := readOf(hd)
			b = arrowrows.NewBuilder(hd.Columns, hd.Types, arrowrows.Meta{Watermark: wm, Tiers: tiers, Mode: hd.Mode.String()})
			header <- b.Schema()
			return nil
		}
		row := func(vals []any) error {
			rows++
			full, err := b.Append(vals)
			if err != nil {
				return err
			}
			if full {
				return send()
			}
			return nil
		}
		err := st.Stream(ctx, begin, row)
		for _, set := range sets[1:] {
			if err != nil {
				break
			}
			if st, err = s.prepare(ctx, sql, set); err == nil {
				err = st.Stream(ctx, begin, row)
			}
		}
		if err == nil && b.Len() > 0 {
			err = send()
		}
		if b != nil {
			b.Release()
		}
		attrs := append(attrs, slog.Duration("took", time.Since(start)), slog.Int64("rows", rows))
		if err == nil {
			s.log.LogAttrs(ctx, slog.LevelInfo, "flight sql query", attrs...)
			return
		}
		gerr := s.failure(ctx, err, attrs)
		if b == nil {
			failed <- gerr
			return
		}
		select {
		case ch <- flight.StreamChunk{Err: gerr}:
		case <-ctx.Done():
		}
	}()
	select {
	case sc := <-header:
		return sc, ch, nil
	case err := <-failed:
		return nil, nil, err
	}
}

// readOf returns the watermark (RFC 3339) and tiers the schema's metadata
// carries: those of the one table a statement read; empty when it read
// none or several, each split at a watermark of its own.
func readOf(hd *store.ResultHeader) (watermark, tiers string) {
	if len(hd.Tables) != 1 {
		return "", ""
	}
	t := hd.Tables[0]
	if t.HasWatermark {
		watermark = t.Watermark.UTC().Format(time.RFC3339Nano)
	}
	return watermark, strings.Join(t.Tiers, ",")
}

// failure logs the error of a query and returns it as the client is told
// it: the client's failures at INFO with their code alone, since the
// error's text may quote the statement and its values, the server's at
// ERROR with the error.
func (s *server) failure(ctx context.Context, err error, attrs []slog.Attr) error {
	if st, ok := status.FromError(err); ok && st.Code() != codes.Unknown {
		// Refused before the store saw it, with its code.
		s.log.LogAttrs(ctx, slog.LevelInfo, "flight sql query failed", append(attrs, slog.String("code", st.Code().String()))...)
		return err
	}
	f := apierror.Query(ctx, err)
	code := queryCode[f.Kind]
	if f.Kind == apierror.Forbidden {
		return s.refuse(ctx, code, metrics.ReasonForbidden, tokenOf(ctx).Name, "", f.Message)
	}
	if f.Client() {
		s.log.LogAttrs(ctx, slog.LevelInfo, "flight sql query failed", append(attrs, slog.String("code", f.Code))...)
	} else {
		s.log.LogAttrs(ctx, slog.LevelError, "flight sql query failed", append(attrs, slog.Any("err", err))...)
	}
	return status.Error(code, f.Message)
}

// queryCode is the gRPC code of each kind of failed query.
var queryCode = map[apierror.Kind]codes.Code{
	apierror.Internal:     codes.Internal,
	apierror.NotReadOnly:  codes.InvalidArgument,
	apierror.InvalidQuery: codes.InvalidArgument,
	apierror.Forbidden:    codes.PermissionDenied,
	apierror.NotPermitted: codes.PermissionDenied,
	apierror.NotFound:     codes.NotFound,
	apierror.Timeout:      codes.DeadlineExceeded,
	apierror.MemoryLimit:  codes.ResourceExhausted,
	apierror.TooLarge:     codes.ResourceExhausted,
	apierror.Altered:      codes.DataLoss,
	apierror.Unavailable:  codes.Unavailable,
	apierror.Canceled:     codes.Canceled,
}

// maxPrepared bounds the prepared statements a token holds open: a client
// that never closes its own cannot grow the server without bound.
const maxPrepared = 256

// A prepared statement, by its handle.
type prepared struct {
	token string  // the name of the token that made it, the one that may use it
	query string  // as the client sent it; prepared again when run
	sets  [][]any // the parameter sets bound last, each a run
}

// preparedStatements are the open prepared statements.
type preparedStatements struct {
	mu      sync.Mutex
	byID    map[string]prepared
	byToken map[string]int
}

func newPreparedStatements() *preparedStatements {
	return &preparedStatements{byID: map[string]prepared{}, byToken: map[string]int{}}
}

// CreatePreparedStatement checks the statement as GetFlightInfoStatement
// does and keeps it under a new handle. Neither its result's schema nor
// parameters are known: the client learns the schema from the stream.
func (s *server) CreatePreparedStatement(ctx context.Context, req flightsql.ActionCreatePreparedStatementRequest) (flightsql.ActionCreatePreparedStatementResult, error) {
	var res flightsql.ActionCreatePreparedStatementResult
	if len(req.GetTransactionId()) > 0 {
		return res, status.Error(codes.InvalidArgument, "transactions are not supported: every statement reads a snapshot of its own")
	}
	if err := s.check(ctx, req.GetQuery()); err != nil {
		return res, err
	}
	var id [16]byte
	rand.Read(id[:]) // never fails (crypto/rand)
	handle := hex.EncodeToString(id[:])
	name := tokenOf(ctx).Name
	p := s.prep
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.byToken[name] >= maxPrepared {
		return res, status.Errorf(codes.ResourceExhausted, "token %q holds %d prepared statements open, as many as allowed: close some", name, maxPrepared)
	}
	p.byID[handle] = prepared{token: name, query: req.GetQuery()}
	p.byToken[name]++
	res.Handle = []byte(handle)
	return res, nil
}

// lookup returns the prepared statement of handle, if the call's token
// made it.
func (s *server) lookup(ctx context.Context, handle []byte) (prepared, error) {
	s.prep.mu.Lock()
	st, ok := s.prep.byID[string(handle)]
	s.prep.mu.Unlock()
	if !ok || st.token != tokenOf(ctx).Name {
		return prepared{}, status.Error(codes.NotFound, "no such prepared statement: it was closed, or never made by this token")
	}
	return st, nil
}

// ClosePreparedStatement forgets a prepared statement.
func (s *server) ClosePreparedStatement(ctx context.Context, req flightsql.ActionClosePreparedStatementRequest) error {
	st, err := s.lookup(ctx, req.GetPreparedStatementHandle())
	if err != nil {
		return err
	}
	p := s.prep
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.byID[string(req.GetPreparedStatementHandle())]; ok {
		delete(p.byID, string(req.GetPreparedStatementHandle()))
		if p.byToken[st.token]--; p.byToken[st.token] <= 0 {
			delete(p.byToken, st.token)
		}
	}
	return nil
}

// GetFlightInfoPreparedStatement returns a ticket that is the command
// itself: DoGet finds the statement by its handle.
func (s *server) GetFlightInfoPreparedStatement(ctx context.Context, cmd flightsql.PreparedStatementQuery, desc *flight.FlightDescriptor) (*flight.FlightInfo, error) {
	if _, err := s.lookup(ctx, cmd.GetPreparedStatementHandle()); err != nil {
		return nil, err
	}
	return ticketInfo(desc, desc.Cmd), nil
}

// DoGetPreparedStatement runs a prepared statement.
func (s *server) DoGetPreparedStatement(ctx context.Context, cmd flightsql.PreparedStatementQuery) (*arrow.Schema, <-chan flight.StreamChunk, error) {
	st, err := s.lookup(ctx, cmd.GetPreparedStatementHandle())
	if err != nil {
		return nil, nil, err
	}
	return s.run(ctx, st.query, st.sets)
}

// DoPutPreparedStatementQuery binds parameter batches to a prepared
// statement: each row is a set of values for its placeholders, in order,
// and DoGet runs it once per set. The values are bound, never made SQL
// text.
func (s *server) DoPutPreparedStatementQuery(ctx context.Context, cmd flightsql.PreparedStatementQuery, r flight.MessageReader, _ flight.MetadataWriter) ([]byte, error) {
	if _, err := s.lookup(ctx, cmd.GetPreparedStatementHandle()); err != nil {
		return nil, err
	}
	sets, err := paramSets(r)
	if err != nil {
		return nil, err
	}
	p := s.prep
	p.mu.Lock()
	defer p.mu.Unlock()
	st, ok := p.byID[string(cmd.GetPreparedStatementHandle())]
	if !ok {
		return nil, status.Error(codes.NotFound, "no such prepared statement: it was closed")
	}
	st.sets = sets
	p.byID[string(cmd.GetPreparedStatementHandle())] = st
	return nil, nil
}

// errReadOnly refuses every write, with the code a statement that is no
// SELECT gets on the query path.
var errReadOnly = status.Error(codes.InvalidArgument,
	"meterstore's Flight SQL is read-only: only SELECT statements are accepted; "+
		"readings are written through POST /v1/tables/{table}/readings or meterstore ingest")

// DoPutCommandStatementUpdate refuses a write.
func (s *server) DoPutCommandStatementUpdate(context.Context, flightsql.StatementUpdate) (int64, error) {
	return 0, errReadOnly
}

// DoPutPreparedStatementUpdate refuses a write.
func (s *server) DoPutPreparedStatementUpdate(context.Context, flightsql.PreparedStatementUpdate, flight.MessageReader) (int64, error) {
	return 0, errReadOnly
}

// DoPutCommandStatementIngest refuses a write.
func (s *server) DoPutCommandStatementIngest(context.Context, flightsql.StatementIngest, flight.MessageReader) (int64, error) {
	return 0, errReadOnly
}

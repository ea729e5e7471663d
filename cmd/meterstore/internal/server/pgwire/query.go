package pgwire

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/meterstore/meterstore/cmd/meterstore/internal/server/auth"
	"github.com/meterstore/meterstore/store"
)

// flushBytes is how much of an answer is buffered before it is written:
// rows are streamed, never held whole.
const flushBytes = 64 << 10

// simpleQuery answers a Query message: one statement (the store refuses
// two), its rows in text.
func (s *session) simpleQuery(sql string) {
	k := s.kindOf(sql)
	if k == kindEmpty {
		s.send(&pgproto3.EmptyQueryResponse{})
		return
	}
	if s.tx == txFailed && !(k == kindLocal && endsBlock(sql)) {
		s.fail(errAborted)
		return
	}
	if k == kindCopy {
		s.copyOut(sql)
		return
	}
	c := s.start(k, sql, nil, nil, nil, nil)
	defer c.close()
	fields, err := c.describe()
	if err != nil {
		s.fail(err)
		return
	}
	if fields != nil {
		s.send(&pgproto3.RowDescription{Fields: fields})
	}
	if _, err := s.stream(c, 0); err != nil {
		s.fail(err)
		return
	}
	s.send(&pgproto3.CommandComplete{CommandTag: []byte(c.tag)})
}

// errAborted refuses a statement in a failed transaction block.
var errAborted = errorf(codeInFailedTransaction, "current transaction is aborted, commands ignored until end of transaction block")

// stream sends up to max rows of c (all if max is 0) as DataRow messages
// and reports whether c has more.
func (s *session) stream(c *cursor, max int) (bool, error) {
	return s.pipe(c, max, func(r [][]byte) int {
		s.send(&pgproto3.DataRow{Values: r})
		n := 0
		for _, v := range r {
			n += len(v) + 4
		}
		return n
	})
}

// pipe hands up to max rows of c (all if max is 0) to send, which
// buffers a message and returns its size, flushing every flushBytes, and
// reports whether c has more.
func (s *session) pipe(c *cursor, max int, send func([][]byte) int) (bool, error) {
	var buffered int
	var writeErr error
	more, err := c.fetch(max, func(r [][]byte) error {
		if buffered += send(r); buffered >= flushBytes {
			buffered = 0
			if writeErr = s.flushed(); writeErr != nil {
				return writeErr
			}
		}
		return nil
	})
	if writeErr != nil {
		return false, fmt.Errorf("pgwire: %w", writeErr)
	}
	return more, err
}

// start starts the statement sql of kind k with the parameters params (as
// bound, of types oids in formats paramFormats), its result in
// resultFormats.
func (s *session) start(k kind, sql string, params [][]byte, oids []uint32, paramFormats, resultFormats []int16) *cursor {
	switch k {
	case kindLocal:
		return s.local(sql)
	case kindEmpty:
		return static(nil, nil, "")
	case kindCopy:
		return failed(errorf(codeFeatureNotSupported, "COPY runs in the simple query protocol only"))
	case kindCatalog:
		cat := s.srv.o.Catalog
		return s.run(func(ctx context.Context, header func([]pgproto3.FieldDescription) error, row func([][]byte) error) (string, error) {
			return cat.Run(s.withSession(ctx), sql, params, oids, paramFormats, resultFormats, header, row)
		})
	}
	vals, err := decodeParams(newParamMap(), oids, paramFormats, params)
	if err != nil {
		return failed(err)
	}
	return s.run(s.storeSource(sql, vals, resultFormats))
}

// options returns the statement options of the session: no default
// table, its read mode, its token's tables.
func (s *session) options(params []any) store.StatementOptions {
	tok := s.tok
	return store.StatementOptions{Params: params, Read: store.ReadOptions{Mode: s.settings.mode()},
		May: func(t string) bool { return auth.MayTouch(tok, t) }}
}

// storeSource is the source of sql run by the store with params, its
// columns in formats.
func (s *session) storeSource(sql string, params []any, formats []int16) source {
	o := s.options(params)
	srv := s.srv
	return func(ctx context.Context, header func([]pgproto3.FieldDescription) error, row func([][]byte) error) (string, error) {
		if srv.slots != nil {
			select {
			case srv.slots <- struct{}{}:
				defer func() { <-srv.slots }()
			default:
				return "", errorf(codeInsufficientRes, "%d statements are running, as many as server.max_concurrent_requests allows: retry shortly", cap(srv.slots))
			}
		}
		st, err := srv.s.Prepare(ctx, sql, o)
		if err != nil {
			return "", err
		}
		var (
			enc  *encoder
			rows int64
		)
		err = st.Stream(ctx, func(hd *store.ResultHeader) error {
			s.mu.Lock()
			s.last = hd
			s.mu.Unlock()
			fs, cols, err := fields(hd.Columns, hd.Types, formats)
			if err != nil {
				return err
			}
			enc = newEncoder(fs, cols)
			srv.log.LogAttrs(ctx, slog.LevelDebug, "postgres statement", slog.String("token", s.tok.Name),
				slog.String("tables", strings.Join(tableNames(hd), ",")))
			return header(fs)
		}, func(vals []any) error {
			r, err := enc.row(vals)
			if err != nil {
				return err
			}
			rows++
			return row(r)
		})
		return fmt.Sprintf("SELECT %d", rows), err
	}
}

// tableNames returns the tables a statement read.
func tableNames(hd *store.ResultHeader) []string {
	out := make([]string, len(hd.Tables))
	for i, t := range hd.Tables {
		out[i] = t.Name
	}
	return out
}

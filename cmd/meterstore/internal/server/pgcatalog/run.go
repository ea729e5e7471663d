package pgcatalog

import (
	"context"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgproto3"
)

// text returns the statement to send for sql, or why it is refused: the
// same analysis as Handles, with its calls of version() answered by
// MeterStore's version (see meterstoreVersion) and its references to the
// session's user by the user Options.User finds in ctx.
func (c *Catalog) text(ctx context.Context, sql string) (string, error) {
	r := analyse(sql, c.schemas)
	if err := r.refusal(); err != nil {
		return "", err
	}
	if len(r.answered) == 0 {
		return sql, nil
	}
	var user string
	var known bool
	if c.o.User != nil {
		user, known = c.o.User(ctx)
	}
	var b strings.Builder
	at := 0
	for _, sp := range r.answered {
		// A scalar subquery takes its column's name from the one
		// column it selects: the answer is named as PostgreSQL names
		// the call's.
		var lit string
		switch {
		case sp.what == "version":
			lit = "(SELECT " + quoteLiteral(c.version) + "::pg_catalog.text AS version)"
		case !known:
			return "", refuse("0A000", "%s: the catalog does not know the session's user here", sp.what)
		default:
			lit = "(SELECT " + quoteLiteral(user) + "::pg_catalog.name AS " + ident(sp.what) + ")"
		}
		b.WriteString(sql[at:r.toks[sp.from].pos])
		b.WriteString(lit)
		at = r.toks[sp.to].end
	}
	b.WriteString(sql[at:])
	return b.String(), nil
}

// quoteLiteral quotes s as a string literal (standard_conforming_strings
// is on in every session of the reader role).
func quoteLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// session runs f on a connection of the reader role in a read-only
// transaction, which it then rolls back. A connection f leaves broken or
// closed is not reused.
func (c *Catalog) session(ctx context.Context, f func(*pgconn.PgConn) error) error {
	conn, err := c.pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("pgcatalog: %w", err)
	}
	defer conn.Release()
	pg := conn.Conn().PgConn()
	if _, err := pg.Exec(ctx, "BEGIN READ ONLY").ReadAll(); err != nil {
		return err
	}
	err = f(pg)
	if !pg.IsClosed() {
		if _, rerr := pg.Exec(ctx, "ROLLBACK").ReadAll(); rerr != nil {
			pg.Close(context.WithoutCancel(ctx))
		}
	}
	return err
}

// Describe returns the parameter types and the columns of sql, as
// PostgreSQL describes it, or the refusal of a statement the Catalog does
// not run.
func (c *Catalog) Describe(ctx context.Context, sql string, paramOIDs []uint32) ([]uint32, []pgproto3.FieldDescription, error) {
	text, err := c.text(ctx, sql)
	if err != nil {
		return nil, nil, err
	}
	var sd *pgconn.StatementDescription
	err = c.session(ctx, func(pg *pgconn.PgConn) error {
		sd, err = pg.Prepare(ctx, "", text, paramOIDs)
		return err
	})
	if err != nil {
		return nil, nil, err
	}
	return sd.ParamOIDs, fields(sd.Fields), nil
}

// Run runs sql with the client's parameters and formats as they came,
// calls describe with its columns and row with each row, which row may
// keep, and returns its command tag. An error of
// PostgreSQL's is returned as the *pgconn.PgError it sent; a statement the
// Catalog does not run, or an answer beyond MaxRows or MaxBytes, is
// refused with a *RefusedError.
func (c *Catalog) Run(ctx context.Context, sql string, params [][]byte, paramOIDs []uint32, paramFormats, resultFormats []int16,
	describe func([]pgproto3.FieldDescription) error, row func([][]byte) error) (string, error) {
	text, err := c.text(ctx, sql)
	if err != nil {
		return "", err
	}
	var tag string
	err = c.session(ctx, func(pg *pgconn.PgConn) error {
		rr := pg.ExecParams(ctx, text, params, paramOIDs, paramFormats, resultFormats)
		fds := rr.FieldDescriptions()
		if fds == nil {
			if _, err := rr.Close(); err != nil {
				return err
			}
		}
		if err := describe(fields(fds)); err != nil {
			return abort(ctx, pg, err)
		}
		rows, size := 0, int64(0)
		for rr.NextRow() {
			vals := rr.Values()
			rows++
			for _, v := range vals {
				size += int64(len(v))
			}
			if err := ctx.Err(); err != nil {
				// Rows already read may be buffered: a cancelled
				// statement stops at once all the same.
				return abort(ctx, pg, err)
			}
			if rows > c.o.MaxRows || size > c.o.MaxBytes {
				return abort(ctx, pg, refuse("54000", "the catalog's answer exceeds %d rows or %d bytes", c.o.MaxRows, c.o.MaxBytes))
			}
			if err := row(copyRow(vals)); err != nil {
				return abort(ctx, pg, err)
			}
		}
		ct, err := rr.Close()
		tag = ct.String()
		return err
	})
	return tag, err
}

// copyRow copies vals, which pgconn reuses for the next row, into one
// allocation: a caller may hand a row on before sending it.
func copyRow(vals [][]byte) [][]byte {
	n := 0
	for _, v := range vals {
		n += len(v)
	}
	buf := make([]byte, 0, n)
	out := make([][]byte, len(vals))
	for i, v := range vals {
		if v == nil {
			continue // NULL stays nil
		}
		buf = append(buf, v...)
		out[i] = buf[len(buf)-len(v) : len(buf) : len(buf)]
	}
	return out
}

// abort ends a statement that is still sending rows by closing its
// connection, so that nothing more of it is read, and returns err.
func abort(ctx context.Context, pg *pgconn.PgConn, err error) error {
	pg.Close(context.WithoutCancel(ctx))
	return err
}

// fields converts pgconn's field descriptions to the protocol's.
func fields(fds []pgconn.FieldDescription) []pgproto3.FieldDescription {
	out := make([]pgproto3.FieldDescription, len(fds))
	for i, f := range fds {
		out[i] = pgproto3.FieldDescription{
			Name: []byte(f.Name), TableOID: f.TableOID, TableAttributeNumber: f.TableAttributeNumber,
			DataTypeOID: f.DataTypeOID, DataTypeSize: f.DataTypeSize, TypeModifier: f.TypeModifier, Format: f.Format,
		}
	}
	return out
}

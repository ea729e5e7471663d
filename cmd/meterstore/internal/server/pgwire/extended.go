package pgwire

import (
	"context"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgtype"
)

// A prepared is a statement of Parse: its text, who answers it, and its
// parameters' types (0 where neither the client nor the statement says).
type prepared struct {
	name      string
	sql       string
	kind      kind
	paramOIDs []uint32
}

// A portal is a prepared statement bound to its parameters, started at
// its Describe or first Execute.
type portal struct {
	stmt          *prepared
	params        [][]byte
	paramFormats  []int16
	resultFormats []int16
	cur           *cursor
}

// newParamMap returns the type map parameters are decoded with.
func newParamMap() *pgtype.Map { return pgtype.NewMap() }

// extended answers a message of the extended protocol.
func (s *session) extended(msg pgproto3.FrontendMessage) error {
	switch m := msg.(type) {
	case *pgproto3.Parse:
		return s.parse(m)
	case *pgproto3.Bind:
		return s.bind(m)
	case *pgproto3.Describe:
		return s.describe(m)
	case *pgproto3.Execute:
		return s.execute(m)
	case *pgproto3.Close:
		switch m.ObjectType {
		case 'S':
			delete(s.stmts, m.Name)
		case 'P':
			s.closePortal(m.Name)
		default:
			return protocolError("Close of object type %q", m.ObjectType)
		}
		s.send(&pgproto3.CloseComplete{})
	}
	return nil
}

// parse answers Parse: the statement is checked as it would run, its
// placeholders counted.
func (s *session) parse(m *pgproto3.Parse) error {
	if _, taken := s.stmts[m.Name]; taken && m.Name != "" {
		return errorf("42P05", "prepared statement %q already exists", m.Name)
	}
	if len(s.stmts) >= maxStatements {
		return errorf(codeProgramLimit, "a session holds at most %d prepared statements: close some", maxStatements)
	}
	p := &prepared{name: m.Name, sql: m.Query, kind: s.kindOf(m.Query), paramOIDs: append([]uint32(nil), m.ParameterOIDs...)}
	if s.tx == txFailed && !(p.kind == kindLocal && endsBlock(p.sql)) {
		return errAborted
	}
	switch p.kind {
	case kindCopy:
		return errorf(codeFeatureNotSupported, "COPY runs in the simple query protocol only")
	case kindStore:
		n, err := s.placeholders(p.sql)
		if err != nil {
			return err
		}
		for len(p.paramOIDs) < n {
			p.paramOIDs = append(p.paramOIDs, 0)
		}
	}
	s.stmts[m.Name] = p
	s.send(&pgproto3.ParseComplete{})
	return nil
}

// placeholders prepares sql as it would run, refusing it as it would be,
// and returns the number of its parameters ($1 to $n).
func (s *session) placeholders(sql string) (int, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := s.srv.s.Prepare(ctx, sql, s.options(nil))
	if err != nil {
		return 0, err
	}
	defer st.Close()
	n := 0
	for _, id := range st.Placeholders() {
		i, err := strconv.Atoi(id)
		if err != nil || i < 1 {
			return 0, errorf(codeFeatureNotSupported, "parameter $%s: the PostgreSQL protocol binds $1, $2, ... only", id)
		}
		n = max(n, i)
	}
	return n, nil
}

// bind answers Bind: a portal of a statement and its parameters.
func (s *session) bind(m *pgproto3.Bind) error {
	p, ok := s.stmts[m.PreparedStatement]
	if !ok {
		return errorf(codeUndefinedPStatement, "prepared statement %q does not exist", m.PreparedStatement)
	}
	if _, taken := s.portals[m.DestinationPortal]; taken {
		if m.DestinationPortal != "" {
			return errorf("42P03", "portal %q already exists", m.DestinationPortal)
		}
		s.closePortal("")
	}
	if len(s.portals) >= maxPortals {
		return errorf(codeProgramLimit, "a session holds at most %d portals: close some", maxPortals)
	}
	if p.kind == kindStore && len(m.Parameters) != len(p.paramOIDs) {
		return protocolError("bind message supplies %d parameters, but prepared statement %q requires %d",
			len(m.Parameters), p.name, len(p.paramOIDs))
	}
	for i := range m.Parameters {
		if _, err := formatOf(m.ParameterFormatCodes, i, len(m.Parameters)); err != nil {
			return err
		}
	}
	for _, f := range m.ResultFormatCodes {
		if f != pgtype.TextFormatCode && f != pgtype.BinaryFormatCode {
			return protocolError("result format code %d: want 0 (text) or 1 (binary)", f)
		}
	}
	// The message is the backend's until the next Receive: keep copies.
	params := make([][]byte, len(m.Parameters))
	for i, v := range m.Parameters {
		if v != nil {
			params[i] = append([]byte{}, v...)
		}
	}
	s.portals[m.DestinationPortal] = &portal{stmt: p, params: params,
		paramFormats:  append([]int16(nil), m.ParameterFormatCodes...),
		resultFormats: append([]int16(nil), m.ResultFormatCodes...)}
	s.send(&pgproto3.BindComplete{})
	return nil
}

// describe answers Describe of a statement (its parameters' types and
// its row description) or of a portal (its row description, the
// statement being started).
func (s *session) describe(m *pgproto3.Describe) error {
	switch m.ObjectType {
	case 'S':
		p, ok := s.stmts[m.Name]
		if !ok {
			return errorf(codeUndefinedPStatement, "prepared statement %q does not exist", m.Name)
		}
		params, fs, err := s.describeStatement(p)
		if err != nil {
			return err
		}
		s.send(&pgproto3.ParameterDescription{ParameterOIDs: params})
		s.sendFields(fs)
	case 'P':
		pt, ok := s.portals[m.Name]
		if !ok {
			return errorf(codeUndefinedCursor, "portal %q does not exist", m.Name)
		}
		fs, err := s.started(pt).describe()
		if err != nil {
			return err
		}
		s.sendFields(fs)
	default:
		return protocolError("Describe of object type %q", m.ObjectType)
	}
	return nil
}

// sendFields sends a row description, or NoData for a statement without
// rows.
func (s *session) sendFields(fs []pgproto3.FieldDescription) {
	if fs == nil {
		s.send(&pgproto3.NoData{})
		return
	}
	s.send(&pgproto3.RowDescription{Fields: fs})
}

// started returns the cursor of pt, starting it.
func (s *session) started(pt *portal) *cursor {
	if pt.cur == nil {
		pt.cur = s.start(pt.stmt.kind, pt.stmt.sql, pt.params, pt.stmt.paramOIDs, pt.paramFormats, pt.resultFormats)
	}
	return pt.cur
}

// describeStatement returns the parameter types and row description of
// p before it is bound. A query's is found by running it with NULL
// parameters and no rows (LIMIT 0 around it), so that its columns are
// those DuckDB gives it; that run reads what the statement reads with no
// bounds, and is so no cheaper than the statement.
func (s *session) describeStatement(p *prepared) ([]uint32, []pgproto3.FieldDescription, error) {
	switch p.kind {
	case kindCatalog:
		ctx, cancel := context.WithCancel(s.withSession(context.Background()))
		defer cancel()
		return s.srv.o.Catalog.Describe(ctx, p.sql, p.paramOIDs)
	case kindEmpty:
		return []uint32{}, nil, nil
	case kindLocal:
		toks, _ := lex(p.sql)
		if len(toks) > 0 && toks[0].is("show") {
			c := s.show(toks[1:])
			defer c.close()
			fs, err := c.describe()
			return []uint32{}, fs, err
		}
		return []uint32{}, nil, nil
	}
	nulls := make([]any, len(p.paramOIDs))
	c := s.run(s.storeSource(wrapNoRows(p.sql), nulls, nil))
	defer c.close()
	fs, err := c.describe()
	if err != nil {
		return nil, nil, err
	}
	return p.paramOIDs, fs, nil
}

// wrapNoRows returns sql as a subquery of a statement that returns no
// rows: a trailing semicolon dropped, a trailing comment ended.
func wrapNoRows(sql string) string {
	body := strings.TrimRight(strings.TrimSpace(sql), "; \t\r\n")
	return "SELECT * FROM (" + body + "\n) AS meterstore_describe LIMIT 0"
}

// execute answers Execute: up to MaxRows rows of the portal (all for 0),
// then PortalSuspended if it has more, else CommandComplete.
func (s *session) execute(m *pgproto3.Execute) error {
	pt, ok := s.portals[m.Portal]
	if !ok {
		return errorf(codeUndefinedCursor, "portal %q does not exist", m.Portal)
	}
	if s.tx == txFailed && !(pt.stmt.kind == kindLocal && endsBlock(pt.stmt.sql)) {
		return errAborted
	}
	if pt.stmt.kind == kindEmpty {
		s.send(&pgproto3.EmptyQueryResponse{})
		return nil
	}
	c := s.started(pt)
	more, err := s.stream(c, int(min(m.MaxRows, 1<<30)))
	if err != nil {
		s.closePortal(m.Portal)
		return err
	}
	if more {
		s.send(&pgproto3.PortalSuspended{})
		return nil
	}
	s.send(&pgproto3.CommandComplete{CommandTag: []byte(c.tag)})
	return nil
}

// closePortal closes the portal of name, ending its statement if it runs.
func (s *session) closePortal(name string) {
	pt, ok := s.portals[name]
	if !ok {
		return
	}
	delete(s.portals, name)
	if pt.cur != nil {
		pt.cur.close()
	}
}

// sync ends the implicit transaction of an extended query outside a
// transaction block: its portals are closed.
func (s *session) sync() {
	if s.tx == txIdle {
		for name := range s.portals {
			s.closePortal(name)
		}
	}
}

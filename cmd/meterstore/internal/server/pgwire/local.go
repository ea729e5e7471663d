package pgwire

import (
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/jackc/pgx/v5/pgtype"
)

// local runs a session statement and returns its answer as a cursor:
// SET, RESET, SHOW, the transaction block's statements and savepoints
// (savepoint.go), DISCARD and
// DEALLOCATE. It changes the session at once, as it is run from the
// connection's goroutine.
func (s *session) local(sql string) *cursor {
	toks, ok := lex(sql)
	if ok {
		toks, ok = oneStatement(toks)
		if !ok {
			return failed(errorf(codeSyntaxError, "send one statement per query: a session statement is followed by another"))
		}
	}
	if !ok || len(toks) == 0 {
		return failed(errorf(codeSyntaxError, "syntax error: an unterminated quote or comment"))
	}
	switch w := strings.ToLower(toks[0].text); w {
	case "set":
		return s.set(toks[1:])
	case "reset":
		return s.reset(toks[1:])
	case "show":
		return s.show(toks[1:])
	case "begin", "start":
		return s.begin(toks[1:])
	case "commit", "end":
		return s.commit()
	case "rollback", "abort":
		switch {
		case len(toks) > 1 && toks[1].is("to"):
			return s.rollbackTo(toks[2:])
		case len(toks) > 2 && (toks[1].is("work") || toks[1].is("transaction")) && toks[2].is("to"):
			return s.rollbackTo(toks[3:])
		}
		return s.rollback()
	case "savepoint":
		return s.savepoint(toks[1:])
	case "release":
		return s.release(toks[1:])
	case "discard":
		return s.discard(toks[1:])
	case "deallocate":
		return s.deallocate(toks[1:])
	}
	return failed(errorf(codeFeatureNotSupported, "%s is not supported: statements are read-only", strings.ToUpper(toks[0].text)))
}

// notice sends a notice of severity sev with code.
func (s *session) notice(sev, code, msg string) {
	s.send(&pgproto3.NoticeResponse{Severity: sev, SeverityUnlocalized: sev, Code: code, Message: msg})
}

// set answers SET [SESSION | LOCAL] name { TO | = } value [, ...], SET
// TIME ZONE value and SET NAMES value.
func (s *session) set(toks []token) *cursor {
	local := false
	if len(toks) > 0 && (toks[0].is("session") || toks[0].is("local")) {
		local = toks[0].is("local")
		toks = toks[1:]
	}
	if len(toks) == 0 {
		return failed(errorf(codeSyntaxError, "syntax error at end of input: SET name TO value"))
	}
	var name string
	var vals []token
	switch {
	case toks[0].is("transaction") || toks[0].is("characteristics"):
		return s.transactionModes(toks[1:], "SET")
	case len(toks) > 1 && toks[0].is("time") && toks[1].is("zone"):
		name, vals = "TimeZone", toks[2:]
	case toks[0].is("names"):
		name, vals = "client_encoding", toks[1:]
	case len(toks) > 2 && (toks[1].is("to") || toks[1].text == "="):
		name, vals = toks[0].text, toks[2:]
	default:
		return failed(errorf(codeSyntaxError, "syntax error: SET name TO value"))
	}
	if len(vals) == 1 && vals[0].is("default") {
		if local {
			return failed(errorf(codeFeatureNotSupported, "SET LOCAL ... TO DEFAULT is not supported: use RESET outside a transaction block"))
		}
		return s.reset([]token{{text: name}})
	}
	k, v, err := s.settings.check(name, joinValues(vals))
	if err != nil {
		return failed(err)
	}
	if local && s.tx == txIdle {
		// Checked all the same, as PostgreSQL does, and of no effect.
		s.notice("WARNING", codeNoActiveTransaction, "SET LOCAL can only be used in transaction blocks")
		return static(nil, nil, "SET")
	}
	before := s.settings.get(k.name)
	s.settings.apply(k, v, local)
	if k.reported && v != before {
		s.send(&pgproto3.ParameterStatus{Name: k.name, Value: v})
	}
	return static(nil, nil, "SET")
}

// joinValues returns the value of a SET: its words, a list joined by
// ", " as PostgreSQL shows it.
func joinValues(vals []token) string {
	var parts []string
	cur := ""
	for _, t := range vals {
		if t.text == "," && !t.quoted {
			parts = append(parts, cur)
			cur = ""
			continue
		}
		if cur != "" {
			cur += " "
		}
		cur += t.text
	}
	return strings.Join(append(parts, cur), ", ")
}

// reset answers RESET name and RESET ALL.
func (s *session) reset(toks []token) *cursor {
	if len(toks) != 1 {
		return failed(errorf(codeSyntaxError, "syntax error: RESET name or RESET ALL"))
	}
	before := s.settings.reported()
	if toks[0].is("all") {
		s.settings.resetAll()
	} else if _, err := s.settings.reset(toks[0].text); err != nil {
		return failed(err)
	}
	s.reportChanges(before)
	return static(nil, nil, "RESET")
}

// reportChanges sends the reported settings whose values are not those
// of before.
func (s *session) reportChanges(before [][2]string) {
	for i, p := range s.settings.reported() {
		if p[1] != before[i][1] {
			s.send(&pgproto3.ParameterStatus{Name: p[0], Value: p[1]})
		}
	}
}

// textField is a text column of a session statement's answer.
func textField(name string) pgproto3.FieldDescription {
	return pgproto3.FieldDescription{Name: []byte(name), DataTypeOID: pgtype.TextOID, DataTypeSize: -1, TypeModifier: -1}
}

// show answers SHOW name and SHOW ALL, in text whatever the formats
// asked: text is text in binary too.
func (s *session) show(toks []token) *cursor {
	if len(toks) == 2 && toks[0].is("time") && toks[1].is("zone") {
		toks = []token{{text: "TimeZone"}}
	}
	if len(toks) == 3 && toks[0].is("transaction") && toks[1].is("isolation") && toks[2].is("level") {
		toks = []token{{text: "transaction_isolation"}}
	}
	if len(toks) != 1 {
		return failed(errorf(codeSyntaxError, "syntax error: SHOW name or SHOW ALL"))
	}
	if toks[0].is("all") {
		var rows [][][]byte
		for _, k := range knownSettings {
			rows = append(rows, [][]byte{[]byte(k.name), []byte(s.value(k.name)), []byte(k.desc)})
		}
		return static([]pgproto3.FieldDescription{textField("name"), textField("setting"), textField("description")}, rows, "SHOW")
	}
	k, ok := settingOf(toks[0].text)
	if !ok {
		return failed(errorf(codeUndefinedObject, "unrecognized configuration parameter %q", toks[0].text))
	}
	return static([]pgproto3.FieldDescription{textField(strings.ToLower(k.name))}, [][][]byte{{[]byte(s.value(k.name))}}, "SHOW")
}

// value returns the value SHOW gives the setting name: the read of the
// last statement for meterstore.watermark and meterstore.tiers, each
// table's as table=value, "; " between tables.
func (s *session) value(name string) string {
	switch name {
	case "meterstore.watermark", "meterstore.tiers":
		s.mu.Lock()
		last := s.last
		s.mu.Unlock()
		if last == nil {
			return ""
		}
		var parts []string
		for _, t := range last.Tables {
			v := ""
			switch {
			case name == "meterstore.tiers":
				v = strings.Join(t.Tiers, ",")
			case t.HasWatermark:
				v = t.Watermark.UTC().Format(time.RFC3339Nano)
			}
			parts = append(parts, t.Name+"="+v)
		}
		return strings.Join(parts, "; ")
	}
	return s.settings.get(name)
}

// begin answers BEGIN and START TRANSACTION with their modes.
func (s *session) begin(toks []token) *cursor {
	if len(toks) > 0 && (toks[0].is("work") || toks[0].is("transaction")) {
		toks = toks[1:]
	}
	if c := s.transactionModes(toks, ""); c != nil {
		return c
	}
	if s.tx != txIdle {
		s.notice("WARNING", codeActiveTransaction, "there is already a transaction in progress")
	}
	s.tx = txBlock
	return static(nil, nil, "BEGIN")
}

// transactionModes checks a transaction's modes: READ WRITE is refused,
// the rest taken (each statement reads a snapshot of its own). It returns
// the answer of SET TRANSACTION when tag is set, else nil if they are
// taken.
func (s *session) transactionModes(toks []token, tag string) *cursor {
	for i := 0; i < len(toks); i++ {
		if toks[i].is("read") && i+1 < len(toks) && toks[i+1].is("write") {
			return failed(errorf(codeReadOnly, "cannot set transaction read-write mode: MeterStore's statements are read-only"))
		}
	}
	if tag != "" {
		return static(nil, nil, tag)
	}
	return nil
}

// commit answers COMMIT and END: a failed block is rolled back.
func (s *session) commit() *cursor {
	tag := "COMMIT"
	switch s.tx {
	case txIdle:
		s.notice("WARNING", codeNoActiveTransaction, "there is no transaction in progress")
	case txFailed:
		tag = "ROLLBACK"
	}
	s.endBlock()
	return static(nil, nil, tag)
}

// rollback answers ROLLBACK and ABORT.
func (s *session) rollback() *cursor {
	if s.tx == txIdle {
		s.notice("WARNING", codeNoActiveTransaction, "there is no transaction in progress")
	}
	s.endBlock()
	return static(nil, nil, "ROLLBACK")
}

// endBlock ends the transaction block: what SET LOCAL set is undone, the
// portals closed.
func (s *session) endBlock() {
	before := s.settings.reported()
	s.settings.endBlock()
	s.reportChanges(before)
	s.tx = txIdle
	s.savepoints = nil
	for name := range s.portals {
		s.closePortal(name)
	}
}

// discard answers DISCARD ALL, PLANS, SEQUENCES and TEMP.
func (s *session) discard(toks []token) *cursor {
	if len(toks) != 1 {
		return failed(errorf(codeSyntaxError, "syntax error: DISCARD ALL"))
	}
	what := strings.ToUpper(toks[0].text)
	switch what {
	case "ALL":
		if s.tx != txIdle {
			return failed(errorf(codeActiveTransaction, "DISCARD ALL cannot run inside a transaction block"))
		}
		before := s.settings.reported()
		s.settings.resetAll()
		s.reportChanges(before)
		for name := range s.portals {
			s.closePortal(name)
		}
		clear(s.stmts)
	case "PLANS", "SEQUENCES", "TEMP", "TEMPORARY":
	default:
		return failed(errorf(codeSyntaxError, "syntax error: DISCARD ALL, PLANS, SEQUENCES or TEMP"))
	}
	return static(nil, nil, "DISCARD "+what)
}

// deallocate answers DEALLOCATE [PREPARE] name and DEALLOCATE ALL: the
// prepared statements of the protocol, which psycopg drops so.
func (s *session) deallocate(toks []token) *cursor {
	if len(toks) > 0 && toks[0].is("prepare") {
		toks = toks[1:]
	}
	if len(toks) != 1 {
		return failed(errorf(codeSyntaxError, "syntax error: DEALLOCATE name or DEALLOCATE ALL"))
	}
	if toks[0].is("all") {
		clear(s.stmts)
		return static(nil, nil, "DEALLOCATE ALL")
	}
	name := toks[0].text
	if _, ok := s.stmts[name]; !ok {
		return failed(errorf(codeUndefinedPStatement, "prepared statement %q does not exist", name))
	}
	delete(s.stmts, name)
	return static(nil, nil, "DEALLOCATE")
}

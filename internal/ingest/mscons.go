package ingest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"maps"
	"strings"

	"github.com/meterstore/meterstore/internal/edifact"
	"github.com/meterstore/meterstore/internal/mscons"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// MaxInterchangeBytes bounds an MSCONS interchange: its envelope counts
// are checked before any message is written, so it is read whole.
const MaxInterchangeBytes = 512 << 20

// Sniff reports the format the start of a delivery shows: MSCONS when it
// begins with UNA or UNB, after an optional byte order mark.
func Sniff(head []byte) (Format, bool) {
	head = bytes.TrimPrefix(head, []byte(bom))
	if bytes.HasPrefix(head, []byte("UNA")) || bytes.HasPrefix(head, []byte("UNB")) {
		return MSCONS, true
	}
	return 0, false
}

// A MessageReport says what became of one MSCONS message.
type MessageReport struct {
	Number   int    // the message's place in the interchange, from 1
	Ref      string // the message reference of UNH
	Document string // the document number of BGM
	Readings int
	// Inserted, Present and Late count the readings written: new, already
	// stored (a redelivery), and gone to the cold tier as late corrections.
	Inserted, Present, Late int
	// Superseded and Shadowed count readings stored beside other versions
	// of their merge key, winning over lower ones or losing to a higher
	// one (series.Status).
	Superseded, Shadowed int
	// Err, if not nil, refused the message: none of its readings is
	// written. It is an *edifact.MessageError when the message broke a
	// rule, or the store's refusal of its readings.
	Err error
}

// MSCONSOptions configure RunMSCONS.
type MSCONSOptions struct {
	// MaLoOf maps metering location ids to their market locations.
	MaLoOf map[string]string
	// Stream, if set, writes the groups of messages, preparing the next
	// while one is written (Store.WriteEach); nil writes them with the
	// WriteFunc, each after the one before.
	Stream StreamFunc
	// GroupRows bounds the readings of the messages written together;
	// zero means DefaultBatchRows, so that MSCONS ingest commits about as
	// often as CSV ingest does.
	GroupRows int
}

// RunMSCONS reads an MSCONS interchange and writes each message's
// readings atomically. A message that breaks a rule or that the store
// refuses is reported and the others are written. The error is for what
// refuses the rest: a broken interchange envelope (nothing written), or a
// write that failed for another reason than the message's content, such
// as an unreachable server (the reports say which messages were written
// before it).
//
// Consecutive messages are written together, up to opts.GroupRows
// readings in one atomic write: a message is then written with the others or not at
// all. The groups go through opts.Stream as the batches of a stream, in
// order. If the store refuses such a group for its content, its messages
// are written again one at a time with write, before the next group, so
// that the refusal falls on the message at fault alone.
func RunMSCONS(ctx context.Context, r io.Reader, t *series.Table, write WriteFunc, opts MSCONSOptions) ([]MessageReport, error) {
	br := bufio.NewReader(r)
	if b, _ := br.Peek(len(bom)); string(b) == bom {
		br.Discard(len(bom))
	}
	data, err := edifact.ReadAll(io.LimitReader(br, MaxInterchangeBytes+1))
	var se *edifact.SyntaxError
	switch {
	case errors.As(err, &se):
		return nil, fmt.Errorf("interchange refused, nothing written: %w", err)
	case err != nil:
		return nil, fmt.Errorf("ingest: read interchange: %w", err)
	case len(data) > MaxInterchangeBytes:
		return nil, fmt.Errorf("ingest: an interchange of more than %d bytes; split it", MaxInterchangeBytes)
	}
	ic, err := edifact.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("interchange refused, nothing written: %w", err)
	}
	msgs, err := mscons.Read(ic, mscons.Options{Table: t, MaLoOf: opts.MaLoOf})
	if err != nil {
		return nil, err
	}
	for i := range msgs {
		recordSource(t, ic.Ref, &msgs[i])
	}
	limit := opts.GroupRows
	if limit <= 0 {
		limit = DefaultBatchRows
	}
	groups, tail := groupMessages(msgs, limit)
	stream := opts.Stream
	if stream == nil {
		stream = Stream(write)
	}
	g := grouper{write: write, reps: make([]MessageReport, 0, len(msgs))}
	at, doneAt := 0, 0
	next := func() ([]series.Reading, error) {
		if at == len(groups) {
			return nil, nil
		}
		at++
		return groups[at-1].rows(), nil
	}
	done := func(status []series.Status, late int, err error) error {
		gr := &groups[doneAt]
		doneAt++
		g.reps = append(g.reps, gr.before...)
		return g.written(ctx, gr.msgs, status, late, err)
	}
	if err := stream(ctx, next, done); err != nil {
		return g.reps, err
	}
	return append(g.reps, tail...), nil
}

// A group is messages written together, and the reports of the messages
// refused before the store saw them (MessageReport.Err) that come before
// them.
type group struct {
	before []MessageReport
	msgs   []*mscons.Message
}

// rows returns the readings of the group's messages, in order.
func (gr *group) rows() []series.Reading {
	if len(gr.msgs) == 1 {
		return gr.msgs[0].Readings
	}
	n := 0
	for _, m := range gr.msgs {
		n += len(m.Readings)
	}
	rows := make([]series.Reading, 0, n)
	for _, m := range gr.msgs {
		rows = append(rows, m.Readings...)
	}
	return rows
}

// groupMessages groups consecutive messages to be written together, up to
// limit readings; a message refused before the store sees it ends a
// group. tail are the reports of such messages after the last group.
func groupMessages(msgs []mscons.Message, limit int) (groups []group, tail []MessageReport) {
	var cur group
	rows := 0
	flush := func() {
		if len(cur.msgs) > 0 {
			groups = append(groups, cur)
			cur, rows = group{}, 0
		}
	}
	for i := range msgs {
		m := &msgs[i]
		rep := MessageReport{Number: m.Number, Ref: m.Ref, Document: m.Document, Readings: len(m.Readings)}
		switch {
		case m.Err != nil:
			rep.Err = m.Err
		case len(m.Readings) > MaxBatchRows:
			rep.Err = fmt.Errorf("%d readings in one message, more than a batch holds (%d)", len(m.Readings), MaxBatchRows)
		default:
			if rows+len(m.Readings) > limit {
				flush()
			}
			cur.msgs = append(cur.msgs, m)
			rows += len(m.Readings)
			continue
		}
		// The reports keep the order of the messages.
		flush()
		cur.before = append(cur.before, rep)
	}
	flush()
	return groups, cur.before
}

// recordSource records in t's provenance columns that m's readings came
// from MSCONS, interchange icRef, message m.Ref: source_ref is
// "<UNB reference>:<UNH reference>", the pair that names a message among
// all a market partner sent.
func recordSource(t *series.Table, icRef string, m *mscons.Message) {
	src := map[string]string{}
	for _, c := range t.Columns {
		switch {
		case c.Name == series.ColumnSourceKind:
			src[c.Name] = series.SourceMSCONS
		case c.Name == series.ColumnSourceRef && icRef+m.Ref != "":
			src[c.Name] = icRef + ":" + m.Ref
		}
	}
	if len(src) == 0 {
		return
	}
	for i := range m.Readings {
		r := &m.Readings[i]
		if len(r.Extra) == 0 {
			r.Extra = src // shared: a write only reads it
			continue
		}
		extra := maps.Clone(r.Extra)
		maps.Copy(extra, src)
		r.Extra = extra
	}
}

// A grouper collects the reports of the groups written.
type grouper struct {
	write WriteFunc
	reps  []MessageReport
}

// written appends the reports of msgs, written together with the outcome
// status, late and err. If the store refused several messages for their
// content, it writes them again one at a time.
func (g *grouper) written(ctx context.Context, msgs []*mscons.Message, status []series.Status, late int, err error) error {
	if len(msgs) == 1 {
		return g.report(msgs[0], status, late, err)
	}
	switch {
	case err != nil && refusedForContent(err):
		for _, m := range msgs {
			status, late, err := g.write(ctx, m.Readings)
			if err := g.report(m, status, late, err); err != nil {
				return err
			}
		}
		return nil
	case err != nil:
		return fmt.Errorf("messages %d %q to %d %q: %w", msgs[0].Number, msgs[0].Ref, msgs[len(msgs)-1].Number, msgs[len(msgs)-1].Ref, err)
	}
	n := 0
	for _, m := range msgs {
		n += len(m.Readings)
	}
	if len(status) != n {
		return fmt.Errorf("messages %d to %d: the store answered %d statuses for %d readings", msgs[0].Number, msgs[len(msgs)-1].Number, len(status), n)
	}
	at := 0
	for _, m := range msgs {
		rep := MessageReport{Number: m.Number, Ref: m.Ref, Document: m.Document, Readings: len(m.Readings)}
		count(&rep, status[at:at+len(m.Readings)])
		at += len(m.Readings)
		if late > 0 {
			// The store counts late rows only for a whole write: each
			// message is written again, all of it present by now, to
			// learn its own. Late corrections are rare.
			if _, rep.Late, err = g.write(ctx, m.Readings); err != nil {
				return fmt.Errorf("message %d %q: counting late corrections: %w", m.Number, m.Ref, err)
			}
		}
		g.reps = append(g.reps, rep)
	}
	return nil
}

// report appends the report of message m, written alone with the
// outcome status, late and err, unless err refuses the rest: a failure
// for another reason than the message's content, which it returns.
func (g *grouper) report(m *mscons.Message, status []series.Status, late int, err error) error {
	rep := MessageReport{Number: m.Number, Ref: m.Ref, Document: m.Document, Readings: len(m.Readings)}
	switch {
	case err != nil && !refusedForContent(err):
		return fmt.Errorf("message %d %q: %w", m.Number, m.Ref, err)
	case err != nil:
		rep.Err = messageError(err, m.Segments)
	default:
		rep.Late = late
		count(&rep, status)
	}
	g.reps = append(g.reps, rep)
	return nil
}

// refusedForContent reports whether the store refused a write for the
// rows it was given, rather than for its own state.
func refusedForContent(err error) bool {
	var se *series.Error
	return errors.As(err, &se) && (se.Kind == series.IntegrityViolation || se.Kind == series.InvalidInput)
}

// count adds up the statuses of a message's readings.
func count(rep *MessageReport, status []series.Status) {
	for _, s := range status {
		switch s {
		case series.Inserted:
			rep.Inserted++
		case series.Present:
			rep.Present++
		case series.Superseded:
			rep.Superseded++
		case series.Shadowed:
			rep.Shadowed++
		}
	}
}

// messageError names the QTY segments of the rows the store refused.
func messageError(err error, segs []int) error {
	var se *series.Error
	if !errors.As(err, &se) || len(se.Problems) == 0 {
		return err
	}
	var b strings.Builder
	for i, p := range se.Problems {
		if i == 10 {
			fmt.Fprintf(&b, "; and %d more", len(se.Problems)-i)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		reason := p.RenameRow(func(i int) (string, bool) {
			if i < 0 || i >= len(segs) {
				return "", false
			}
			return fmt.Sprintf("segment %d", segs[i]), true
		})
		if p.Row >= 0 && p.Row < len(segs) {
			fmt.Fprintf(&b, "segment %d (QTY): ", segs[p.Row])
		}
		b.WriteString(reason)
	}
	return &refusal{text: fmt.Sprintf("%s (%s)", b.String(), se.Kind), err: err}
}

// A refusal is the store's refusal of a message, its rows renamed to the
// message's segments.
type refusal struct {
	text string
	err  error
}

func (r *refusal) Error() string { return r.text }
func (r *refusal) Unwrap() error { return r.err }

// ReadRelations reads a CSV of melo_id,malo_id (a header, then one
// relation per line) into a map from metering to market location.
func ReadRelations(r io.Reader) (map[string]string, error) {
	cr := csv.NewReader(bufio.NewReader(r))
	cr.FieldsPerRecord = 2
	head, err := cr.Read()
	if err != nil {
		return nil, fmt.Errorf("ingest: relations: %w", err)
	}
	if strings.TrimPrefix(head[0], bom) != "melo_id" || head[1] != "malo_id" {
		return nil, fmt.Errorf("ingest: relations: header %q: want melo_id,malo_id", strings.Join(head, ","))
	}
	out := map[string]string{}
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("ingest: relations: %w", err)
		}
		line, _ := cr.FieldPos(0)
		if _, err := metering.ParseMeLo(rec[0]); err != nil {
			return nil, fmt.Errorf("ingest: relations: line %d: %w", line, err)
		}
		if _, err := metering.ParseMaLo(rec[1]); err != nil {
			return nil, fmt.Errorf("ingest: relations: line %d: %w", line, err)
		}
		if prev, ok := out[rec[0]]; ok && prev != rec[1] {
			return nil, fmt.Errorf("ingest: relations: line %d: %s belongs to %s and %s", line, rec[0], prev, rec[1])
		}
		out[rec[0]] = rec[1]
	}
}

package ingest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/meterstore/meterstore/internal/edifact"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

var msconsTable = &series.Table{Name: "power", TimeModel: series.Interval, Commodity: metering.Electricity,
	Resolutions: []metering.Resolution{metering.QuarterHour}, Width: series.Daily}

func TestSniff(t *testing.T) {
	for in, want := range map[string]bool{"UNA:+.? '": true, "UNB+UNOC": true, bom + "UNB+": true, "malo_id,": false, `{"malo_id"`: false, "UN": false} {
		if _, got := Sniff([]byte(in)); got != want {
			t.Errorf("Sniff(%q) = %v", in, got)
		}
	}
}

// interchangeOf returns the fixture mapping.edi with n messages, MSGi
// dated i-1 hours after the first, so that each has a version of its own.
func interchangeOf(t *testing.T, n int) string {
	t.Helper()
	b, err := os.ReadFile("../mscons/testdata/mapping.edi")
	if err != nil {
		t.Fatal(err)
	}
	one := string(b)
	body := one[strings.Index(one, "UNH"):strings.Index(one, "UNZ")]
	var msgs strings.Builder
	for i := 1; i <= n; i++ {
		msgs.WriteString(strings.NewReplacer("MSG1", fmt.Sprintf("MSG%d", i),
			"DTM+137:202603301015", fmt.Sprintf("DTM+137:20260330%d15", 9+i)).Replace(body))
	}
	return one[:strings.Index(one, "UNH")] + msgs.String() + fmt.Sprintf("UNZ+%d", n) + one[strings.Index(one, "UNZ")+len("UNZ+1"):]
}

// rel relates the fixture's metering location to a market location.
var rel = map[string]string{"DE0001234567890000000000000000001": "41234567896"}

// lateOf counts, as a stand-in for the watermark, the readings of the
// metering location as late: one per message of the fixture.
func lateOf(rows []series.Reading) int {
	n := 0
	for _, r := range rows {
		if r.MeLo != "" {
			n++
		}
	}
	return n
}

// TestRunMSCONSRefusals: a message the store refuses for its content is
// reported and the next written; a failure of the store itself stops.
func TestRunMSCONSRefusals(t *testing.T) {
	one, two := interchangeOf(t, 1), interchangeOf(t, 2)
	// The store refuses MSG1's third reading, wherever it stands.
	refuse := func(ctx context.Context, rows []series.Reading) ([]series.Status, int, error) {
		for i, r := range rows {
			if r.Version == 20260330101500 {
				return nil, 0, &series.Error{Kind: series.IntegrityViolation, Op: "write", Rows: []int{i + 2},
					Problems: []series.Problem{{Row: i + 2, Reason: fmt.Sprintf("restates row %d under version 1 with another value", i)}}}
			}
		}
		st := make([]series.Status, len(rows))
		for i := range st {
			st[i] = series.Inserted
		}
		return st, lateOf(rows), nil
	}
	reps, err := RunMSCONS(t.Context(), strings.NewReader(two), msconsTable, refuse, MSCONSOptions{MaLoOf: rel})
	if err != nil {
		t.Fatal(err)
	}
	if len(reps) != 2 || reps[0].Err == nil || reps[1].Err != nil || reps[1].Inserted != 8 || reps[1].Late != 1 {
		t.Fatalf("reports %+v", reps)
	}
	if got := reps[0].Err.Error(); !strings.Contains(got, "segment 21 (QTY): restates segment 14 under version 1 with another value (integrity violation)") {
		t.Errorf("refusal %q does not name the segments", got)
	}

	down := func(ctx context.Context, rows []series.Reading) ([]series.Status, int, error) {
		return nil, 0, &series.Error{Kind: series.Unavailable, Op: "write", Err: errors.New("connection refused")}
	}
	reps, err = RunMSCONS(t.Context(), strings.NewReader(two), msconsTable, down, MSCONSOptions{MaLoOf: rel})
	if !series.IsRetryable(err) || len(reps) != 0 {
		t.Fatalf("store down: %v, %+v", err, reps)
	}

	if _, err := RunMSCONS(t.Context(), strings.NewReader(strings.Replace(one, "UNZ+1", "UNZ+3", 1)), msconsTable, refuse, MSCONSOptions{}); err == nil ||
		!strings.Contains(err.Error(), "interchange refused, nothing written") {
		t.Fatalf("bad UNZ: %v", err)
	}
}

// TestRunMSCONSLongSegment: an interchange whose BGM never ends, as a
// delivery of 64 MiB would have it, is refused naming the segment before
// anything is written, and read no further than a few times
// edifact.MaxSegmentBytes; a byte order mark before it does not shift the
// count.
func TestRunMSCONSLongSegment(t *testing.T) {
	one := interchangeOf(t, 1)
	head := one[:strings.Index(one, "BGM+7+")+len("BGM+7+")]
	for _, prefix := range []string{"", bom} {
		r := &countingReader{r: io.MultiReader(strings.NewReader(prefix+head), bytes.NewReader(bytes.Repeat([]byte("X"), 64<<20)))}
		written := 0
		write := func(_ context.Context, rows []series.Reading) ([]series.Status, int, error) {
			written += len(rows)
			return make([]series.Status, len(rows)), 0, nil
		}
		reps, err := RunMSCONS(t.Context(), r, msconsTable, write, MSCONSOptions{MaLoOf: rel})
		if err == nil || err.Error() != "interchange refused, nothing written: segment 3 (BGM): longer than 65536 bytes, the most a segment may have" ||
			len(reps) != 0 || written != 0 {
			t.Errorf("%q: %v, %d reports, %d rows written", prefix, err, len(reps), written)
		}
		if r.n > 4*edifact.MaxSegmentBytes {
			t.Errorf("%q: %d bytes read; want at most %d", prefix, r.n, 4*edifact.MaxSegmentBytes)
		}
	}
}

// countingReader counts the bytes read from r.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// TestRunMSCONSGroups: messages are written together, each reported with
// its own counts; late readings are counted message by message.
func TestRunMSCONSGroups(t *testing.T) {
	for _, late := range []bool{false, true} {
		var calls []int
		store := func(ctx context.Context, rows []series.Reading) ([]series.Status, int, error) {
			calls = append(calls, len(rows))
			st := make([]series.Status, len(rows))
			for i, r := range rows {
				st[i] = series.Inserted
				if r.Quality == metering.Substitute {
					st[i] = series.Present
				}
			}
			if !late {
				return st, 0, nil
			}
			return st, lateOf(rows), nil
		}
		reps, err := RunMSCONS(t.Context(), strings.NewReader(interchangeOf(t, 3)), msconsTable, store, MSCONSOptions{MaLoOf: rel})
		if err != nil {
			t.Fatal(err)
		}
		want := []int{24}
		if late {
			want = []int{24, 8, 8, 8}
		}
		if fmt.Sprint(calls) != fmt.Sprint(want) {
			t.Errorf("late %v: writes of %v readings, want %v", late, calls, want)
		}
		for i, r := range reps {
			wantLate := 0
			if late {
				wantLate = 1
			}
			if r.Number != i+1 || r.Err != nil || r.Readings != 8 || r.Inserted != 7 || r.Present != 1 || r.Late != wantLate {
				t.Errorf("late %v: report %+v", late, r)
			}
		}
		if len(reps) != 3 {
			t.Errorf("%d reports", len(reps))
		}
	}
}

func TestReadRelations(t *testing.T) {
	m, err := ReadRelations(strings.NewReader("melo_id,malo_id\nDE0001234567890000000000000000001,41234567896\n"))
	if err != nil || m["DE0001234567890000000000000000001"] != "41234567896" {
		t.Fatalf("%v %v", m, err)
	}
	for _, in := range []string{
		"malo_id,melo_id\n",
		"melo_id,malo_id\nDE0001234567890000000000000000001,41234567890\n",
		"melo_id,malo_id\nDE0001,41234567896\n",
		"melo_id,malo_id\nDE0001234567890000000000000000001,41234567896\nDE0001234567890000000000000000001,51234567895\n",
	} {
		if _, err := ReadRelations(strings.NewReader(in)); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
}

// TestRunMSCONSSource: a table declaring the provenance columns gets each
// reading's interchange and message reference; one without gets none.
func TestRunMSCONSSource(t *testing.T) {
	var got []string
	record := func(ctx context.Context, rows []series.Reading) ([]series.Status, int, error) {
		for _, r := range rows {
			got = append(got, fmt.Sprint(r.Extra))
		}
		return make([]series.Status, len(rows)), 0, nil
	}
	withSource := *msconsTable
	withSource.Columns = series.ProvenanceColumns()
	if _, err := RunMSCONS(t.Context(), strings.NewReader(interchangeOf(t, 2)), &withSource, record, MSCONSOptions{MaLoOf: rel}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 16 || got[0] != "map[source_kind:mscons source_ref:IC0001:MSG1]" || got[15] != "map[source_kind:mscons source_ref:IC0001:MSG2]" {
		t.Fatalf("extra columns %q", got)
	}
	got = nil
	if _, err := RunMSCONS(t.Context(), strings.NewReader(interchangeOf(t, 1)), msconsTable, record, MSCONSOptions{MaLoOf: rel}); err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 || got[0] != "map[]" {
		t.Fatalf("a table without provenance columns: %q", got)
	}
}

// memStore is a store of readings for the MSCONS tests: a reading is
// Inserted once and Present after, a write holding a reading of version
// refuse is refused for its content, and after failAfter writes (if not
// zero) every write fails as an unreachable server's would.
type memStore struct {
	stored    map[string]bool
	refuse    uint64
	failAfter int
	writes    int
}

func (s *memStore) write(_ context.Context, rows []series.Reading) ([]series.Status, int, error) {
	s.writes++
	if s.failAfter > 0 && s.writes > s.failAfter {
		return nil, 0, &series.Error{Kind: series.Unavailable, Op: "write", Err: errors.New("connection refused")}
	}
	for i, r := range rows {
		if r.Version == s.refuse && i > 0 {
			return nil, 0, &series.Error{Kind: series.IntegrityViolation, Op: "write", Rows: []int{i},
				Problems: []series.Problem{{Row: i, Reason: "restates a stored reading with another value"}}}
		}
	}
	st := make([]series.Status, len(rows))
	for i, r := range rows {
		k := fmt.Sprint(r.MaLo, r.OBIS, r.From.UnixMicro(), r.Version)
		st[i] = series.Present
		if !s.stored[k] {
			s.stored[k] = true
			st[i] = series.Inserted
		}
	}
	return st, 0, nil
}

// TestRunMSCONSStream: groups of messages written as a stream, the next
// prepared while one is written, give every message the report that
// writing each message alone gives, a group the store refuses for a
// message's content included (its messages are written again one by
// one); a failure of the store stops the stream, and no message after
// the group it failed is written.
func TestRunMSCONSStream(t *testing.T) {
	ic := interchangeOf(t, 12)    // MSGi has version 20260330(9+i)1500
	const refuse = 20260330141500 // MSG5's
	alone := &memStore{stored: map[string]bool{}, refuse: refuse}
	want, err := RunMSCONS(t.Context(), strings.NewReader(ic), msconsTable, alone.write, MSCONSOptions{MaLoOf: rel, GroupRows: 8})
	if err != nil {
		t.Fatal(err)
	}
	if alone.writes != 12 || len(want) != 12 || want[4].Err == nil {
		t.Fatalf("one by one: %d writes, reports %+v", alone.writes, want)
	}
	show := func(reps []MessageReport) string {
		var b strings.Builder
		for _, r := range reps {
			fmt.Fprintf(&b, "%d %s %d %d %d %v\n", r.Number, r.Ref, r.Readings, r.Inserted, r.Present, r.Err)
		}
		return b.String()
	}

	s := &memStore{stored: map[string]bool{}, refuse: refuse}
	streams, groups := 0, 0
	stream := func(ctx context.Context, next func() ([]series.Reading, error), done func([]series.Status, int, error) error) error {
		streams++
		return Stream(s.write)(ctx, next, func(st []series.Status, late int, err error) error {
			groups++
			return done(st, late, err)
		})
	}
	got, err := RunMSCONS(t.Context(), strings.NewReader(ic), msconsTable, s.write, MSCONSOptions{MaLoOf: rel, GroupRows: 24, Stream: stream})
	if err != nil {
		t.Fatal(err)
	}
	if streams != 1 || groups != 4 {
		t.Errorf("%d streams of %d groups, want one of 4", streams, groups)
	}
	// Four groups of three messages, the second refused and written again
	// message by message.
	if s.writes != 4+3 {
		t.Errorf("%d writes, want 7", s.writes)
	}
	if show(got) != show(want) {
		t.Errorf("as a stream:\n%s\none by one:\n%s", show(got), show(want))
	}

	down := &memStore{stored: map[string]bool{}, refuse: refuse, failAfter: 2 + 3}
	stream = func(ctx context.Context, next func() ([]series.Reading, error), done func([]series.Status, int, error) error) error {
		return Stream(down.write)(ctx, next, done)
	}
	got, err = RunMSCONS(t.Context(), strings.NewReader(ic), msconsTable, down.write, MSCONSOptions{MaLoOf: rel, GroupRows: 24, Stream: stream})
	if !series.IsRetryable(err) || !strings.Contains(err.Error(), `messages 7 "MSG7" to 9 "MSG9"`) {
		t.Fatalf("store down at the third group: %v", err)
	}
	if show(got) != show(want[:6]) || down.writes != 6 {
		t.Fatalf("store down at the third group: %d writes, reports\n%s", down.writes, show(got))
	}
}

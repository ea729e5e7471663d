package ingest

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

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

// TestRunMSCONSRefusals: a message the store refuses for its content is
// reported and the next written; a failure of the store itself stops.
func TestRunMSCONSRefusals(t *testing.T) {
	b, err := os.ReadFile("../mscons/testdata/mapping.edi")
	if err != nil {
		t.Fatal(err)
	}
	one := string(b)
	body := one[strings.Index(one, "UNH"):strings.Index(one, "UNZ")]
	two := strings.Replace(strings.Replace(one, "UNZ+1", "UNZ+2", 1), "UNZ", strings.ReplaceAll(body, "MSG1", "MSG2")+"UNZ", 1)
	rel := map[string]string{"DE0001234567890000000000000000001": "41234567896"}
	calls := 0
	refuse := func(ctx context.Context, rows []series.Reading) ([]series.Status, int, error) {
		calls++
		if calls == 1 {
			return nil, 0, &series.Error{Kind: series.IntegrityViolation, Op: "write", Rows: []int{2},
				Problems: []series.Problem{{Row: 2, Reason: "restates row 0 under version 1 with another value"}}}
		}
		st := make([]series.Status, len(rows))
		for i := range st {
			st[i] = series.Inserted
		}
		return st, 1, nil
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

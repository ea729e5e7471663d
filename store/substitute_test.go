package store

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// substitute returns quarter hour slot of meter i on day d as a substitute
// value without a version.
func substitute(i, d, slot int, value int64) Reading {
	r := qh(i, d, slot, "A", 0, value)
	r.Quality = metering.Substitute
	return r
}

// TestWriteSubstitutes appends substitute values over a stored reading
// with a higher version than any of the batch's own, and over none: they
// win, carry the next version and who formed them. Substitutes with a
// version, of another quality, in another version scope, without By or
// in a table without the column are refused, naming the row, and nothing
// is written.
func TestWriteSubstitutes(t *testing.T) {
	ctx := t.Context()
	tab := power()
	tab.Columns = append(tab.Columns, series.Column{Name: ColumnSubstitutedBy})
	s := newEnv(t).open(t, Options{Tables: []Table{tab}})
	if err := s.CreatePartitions(ctx, dayN(0), dayN(2)); err != nil {
		t.Fatal(err)
	}
	const high = 20260402100000 // an MSCONS document time
	if res := mustWrite(t, s, []Reading{qh(1, 0, 4, "A", high, 100), qh(1, 0, 5, "A", high, 100)}); res.Versions != nil {
		t.Fatalf("versions of a write without substitutes: %v", res.Versions)
	}
	sub := WriteOptions{Substitute: true, By: "9900000000012"}
	res, err := s.WriteWith(ctx, "power", []Reading{substitute(1, 0, 4, 777), substitute(2, 0, 4, 555)}, sub)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(res.Status) != "[superseded inserted]" {
		t.Fatalf("statuses %v", res.Status)
	}
	if got, want := fmt.Sprint(res.Versions), fmt.Sprintf("[%d 1]", high+1); got != want {
		t.Fatalf("versions given %s, want %s", got, want)
	}

	got := mustQuery(t, s, `SELECT malo_id, value, quality, version, substituted_by FROM readings WHERE "from" = TIMESTAMPTZ '`+
		dayN(0).Add(time.Hour).Format(time.RFC3339)+`' ORDER BY malo_id`)
	want := fmt.Sprintf("[[%s 0.000777 67 %d 9900000000012] [%s 0.000555 67 1 9900000000012]]", malo(1), high+1, malo(2))
	if fmt.Sprint(got.Rows) != want {
		t.Fatalf("resolved readings %v, want %s", got.Rows, want)
	}
	// A later delivery of the reading wins over the substitute again.
	if res := mustWrite(t, s, []Reading{qh(1, 0, 4, "A", high+2, 101)}); res.Superseded != 1 {
		t.Fatalf("%+v", res)
	}

	other := substitute(1, 0, 5, 9)
	other.VersionScope = "9900000000010:" + other.From.Format("2006-01")
	versioned := substitute(3, 0, 6, 9)
	versioned.Version = 7
	measured := substitute(3, 0, 7, 9)
	measured.Quality = metering.TrueValue
	for _, c := range []struct {
		name string
		rows []Reading
		opts WriteOptions
		kind series.Kind
		row  int
		why  string
	}{
		{"another version scope", []Reading{substitute(4, 0, 5, 9), other}, sub, series.IntegrityViolation, 1, "versions are compared only within one scope"},
		{"own version", []Reading{substitute(4, 0, 5, 9), versioned}, sub, series.InvalidInput, 1, "comes without a version"},
		{"not quality 67", []Reading{measured}, sub, series.InvalidInput, 0, "quality 67"},
	} {
		_, err := s.WriteWith(ctx, "power", c.rows, c.opts)
		var e *series.Error
		if !errors.As(err, &e) || e.Kind != c.kind || len(e.Problems) != 1 || e.Problems[0].Row != c.row || !strings.Contains(e.Problems[0].Reason, c.why) {
			t.Fatalf("%s: %v", c.name, err)
		}
	}
	if _, err := s.WriteWith(ctx, "power", []Reading{substitute(4, 0, 5, 9)}, WriteOptions{Substitute: true}); !isKind(err, series.InvalidInput) || !strings.Contains(err.Error(), "By") {
		t.Fatalf("without By: %v", err)
	}
	if got := mustQuery(t, s, `SELECT count(*) FROM readings_versions WHERE malo_id IN ('`+malo(3)+`', '`+malo(4)+`')`); fmt.Sprint(got.Rows) != "[[0]]" {
		t.Fatalf("refused substitutes stored: %v", got.Rows)
	}

	plain := newEnv(t).open(t, Options{})
	if _, err := plain.WriteWith(ctx, "power", []Reading{substitute(1, 0, 4, 9)}, sub); !isKind(err, series.InvalidInput) || !strings.Contains(err.Error(), ColumnSubstitutedBy) {
		t.Fatalf("a table without %s: %v", ColumnSubstitutedBy, err)
	}
}

func isKind(err error, k series.Kind) bool {
	var e *series.Error
	return errors.As(err, &e) && e.Kind == k
}

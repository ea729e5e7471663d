package hot

import (
	"context"
	"io"
	"math"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/meterstore/meterstore/metering"
	"github.com/meterstore/meterstore/series"
)

// TestWriteScanRoundTripBinary: the rows the tier encodes itself for the
// direct copy (copybin.go) read back as written, at the ends of the
// ranges of value and version, both encoded in the transaction (the first
// write, before the table's layout is known) and ahead of it (later ones).
func TestWriteScanRoundTripBinary(t *testing.T) {
	h, _ := newTier(t, Options{})
	tab := lastgang("lastgang")
	declare(t, h, tab)
	values := []series.Decimal{0, -1, 1, series.MaxDecimal, -series.MaxDecimal, 123_000_000, -10_000_000_000, 99_990_000}
	versions := []uint64{0, 1, 9999, 10000, 100_000_000, math.MaxUint64}
	var all []series.Reading
	for m, v := range versions {
		rows := meterDay(m, v)
		for i := range rows {
			rows[i].Value = values[(i+m)%len(values)]
		}
		mustWrite(t, h, tab, rows)
		all = append(all, rows...)
	}
	if _, ok := h.knownLayout(tab); !ok {
		t.Fatal("layout not remembered after a write: no batch was encoded ahead")
	}
	cal, err := metering.NewCalendar()
	if err != nil {
		t.Fatal(err)
	}
	got := scanAll(t, h, tab)
	if len(got) != len(all) {
		t.Fatalf("scanned %d readings, want %d", len(got), len(all))
	}
	for i, g := range got {
		w := all[i] // written in primary key order already
		if !g.From.Equal(w.From) || !g.To.Equal(w.To) || g.Value != w.Value || g.Version != w.Version || g.Quality != w.Quality {
			t.Fatalf("reading %d: got %v-%v %d v%d %v, want %v-%v %d v%d %v", i,
				g.From, g.To, g.Value, g.Version, g.Quality, w.From, w.To, w.Value, w.Version, w.Quality)
		}
		if want := cal.BalancingDay(w.From, metering.Electricity); g.BalancingDay != want {
			t.Fatalf("reading %d: balancing day %v, want %v", i, g.BalancingDay, want)
		}
	}
}

// TestDirectCopyKeyOrder: a batch whose meters come in the opposite order
// of their series ids is copied in primary key order all the same, so
// each row goes to the rightmost page of the partition's primary key,
// which stays dense (at most 45 bytes an entry of 36; about 72 if the
// pages split in the middle), and every reading reads back as written.
func TestDirectCopyKeyOrder(t *testing.T) {
	h, pool := newTier(t, Options{})
	tab := lastgang("lastgang")
	tab.Integrity = series.IntegrityStatement
	declare(t, h, tab)
	const batches, meters = 5, 50
	var want []series.Reading
	for b := range batches {
		var rows []series.Reading
		for m := meters - 1; m >= 0; m-- {
			rows = append(rows, meterDay(b*meters+m, 7)...)
		}
		if res := mustWrite(t, h, tab, rows); res.Inserted != len(rows) {
			t.Fatalf("batch %d: %+v, want %d inserted", b, res, len(rows))
		}
		for m := range meters {
			want = append(want, meterDay(b*meters+m, 7)...)
		}
	}
	got := scanAll(t, h, tab)
	if len(got) != len(want) {
		t.Fatalf("scanned %d readings, want %d", len(got), len(want))
	}
	for i, g := range got {
		if w := want[i]; g.MaLo != w.MaLo || !g.From.Equal(w.From) || g.Value != w.Value || g.Version != w.Version {
			t.Fatalf("reading %d: got %s %v %d v%d, want %s %v %d v%d", i, g.MaLo, g.From, g.Value, g.Version, w.MaLo, w.From, w.Value, w.Version)
		}
	}
	var size int64
	pkey := partitionName(tab, day) + "_pkey"
	if err := pool.QueryRow(context.Background(), `SELECT pg_relation_size($1::regclass)`, pgx.Identifier{h.schema, pkey}.Sanitize()).Scan(&size); err != nil {
		t.Fatal(err)
	}
	if per := float64(size) / float64(len(want)); per > 45 {
		t.Errorf("primary key %s takes %.1f bytes a reading: its pages split in the middle", pkey, per)
	}
}

// TestSegmentsRead: segments read as their concatenation, whatever the
// size of the reads and with empty segments among them, then io.EOF.
func TestSegmentsRead(t *testing.T) {
	parts := [][]byte{[]byte("PGCOPY"), nil, []byte("ab"), []byte("c"), {}, []byte("defgh")}
	want := "PGCOPYabcdefgh"
	for _, size := range []int{1, 2, 3, 64} {
		s := make(segments, len(parts))
		copy(s, parts)
		var got []byte
		buf := make([]byte, size)
		for range 100 {
			n, err := s.Read(buf)
			got = append(got, buf[:n]...)
			if err == io.EOF {
				break
			}
			if err != nil || n == 0 {
				t.Fatalf("read %d: %d, %v", size, n, err)
			}
		}
		if string(got) != want {
			t.Fatalf("reads of %d: %q, want %q", size, got, want)
		}
	}
	if string(parts[2]) != "ab" {
		t.Fatalf("reading changed the segments read: %q", parts[2])
	}
}

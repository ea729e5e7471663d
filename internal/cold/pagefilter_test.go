package cold

import (
	"reflect"
	"testing"
)

// TestMatchIndices: dictionary indices are matched across RLE and
// bit-packed runs, a short last run included, and no truncation or
// corruption of the runs panics: it is an error, or matches rows of the
// page only.
func TestMatchIndices(t *testing.T) {
	// Bit width 3; five times index 2 (RLE); eight indices bit-packed;
	// two more in a bit-packed group of eight the page ends within.
	packed := []uint64{0, 2, 1, 2, 2, 3, 7, 2}
	page := []byte{3, 5 << 1, 2, 1<<1 | 1}
	page = append(page, pack(packed, 3)...)
	page = append(page, 1<<1|1)
	page = append(page, pack([]uint64{2, 5, 0, 0, 0, 0, 0, 0}, 3)...)
	const n = 5 + 8 + 2
	var got []rowRange
	add := func(from, to int64) { got = appendRange(got, rowRange{from, to}) }
	if err := matchIndices(page, n, 2, add); err != nil {
		t.Fatal(err)
	}
	want := []rowRange{{0, 5}, {6, 7}, {8, 10}, {12, 14}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("index 2 at %v, want %v", got, want)
	}
	got = nil
	if err := matchIndices(page, n, 7, add); err != nil || !reflect.DeepEqual(got, []rowRange{{11, 12}}) {
		t.Errorf("index 7 at %v (%v), want [11, 12)", got, err)
	}
	for cut := range len(page) {
		got = nil
		err := matchIndices(page[:cut], n, 2, add)
		if err == nil && cut < len(page)-2 { // the last two indices need one byte of three
			t.Errorf("the page cut to %d bytes: no error", cut)
		}
		if len(got) > 0 && got[len(got)-1].to > n {
			t.Errorf("the page cut to %d bytes: rows %v beyond the page", cut, got)
		}
	}
	for i := range page {
		for _, b := range []byte{0, 0x7f, 0xff} {
			bad := append([]byte(nil), page...)
			bad[i] = b
			got = nil
			_ = matchIndices(bad, n, 2, add)
			if len(got) > 0 && got[len(got)-1].to > n {
				t.Errorf("byte %d set to %#x: rows %v beyond the page", i, b, got)
			}
		}
	}
}

// pack packs vs, bw bits each, least significant bit first.
func pack(vs []uint64, bw int) []byte {
	out := make([]byte, (len(vs)*bw+7)/8)
	for i, v := range vs {
		for k := range bw {
			if v>>k&1 == 1 {
				bit := i*bw + k
				out[bit/8] |= 1 << (bit % 8)
			}
		}
	}
	return out
}

// TestMatchPlain: plain byte arrays are matched in place, and a length
// beyond the page is an error, not a panic.
func TestMatchPlain(t *testing.T) {
	var page []byte
	for _, v := range []string{"a", "bb", "bb", "", "bb"} {
		page = append(page, byte(len(v)), 0, 0, 0)
		page = append(page, v...)
	}
	var got []rowRange
	add := func(from, to int64) { got = appendRange(got, rowRange{from, to}) }
	if err := matchPlain(page, 5, []byte("bb"), add); err != nil || !reflect.DeepEqual(got, []rowRange{{1, 3}, {4, 5}}) {
		t.Errorf("bb at %v (%v), want [1, 3) and [4, 5)", got, err)
	}
	if err := matchPlain(page[:len(page)-1], 5, []byte("bb"), add); err == nil {
		t.Error("a page cut short: no error")
	}
	if _, err := dictIndex([]byte{0xff, 0xff, 0xff, 0xff, 'x'}, 1, []byte("x")); err == nil {
		t.Error("a dictionary value longer than its page: no error")
	}
}

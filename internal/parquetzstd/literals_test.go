package parquetzstd

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/klauspost/compress/huff0"
	"github.com/klauspost/compress/zstd"
)

// indexes returns n bytes of 10-bit dictionary indexes, bit-packed as
// Parquet packs them, drawn from a skewed distribution over 516 values:
// a page of metered values, with nothing for zstd to match.
func indexes(n int) []byte {
	r := rand.New(rand.NewPCG(5, 6))
	out := make([]byte, 0, n+2)
	var acc uint32
	bits := 0
	for len(out) < n {
		acc |= uint32(min(r.IntN(516), r.IntN(516), r.IntN(516))) << bits
		bits += 10
		for bits >= 8 {
			out = append(out, byte(acc))
			acc >>= 8
			bits -= 8
		}
	}
	return out[:n]
}

func TestLiteralFrame(t *testing.T) {
	plain, err := zstd.NewReader(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	var s huff0.Scratch
	// Sizes around the frame header's and the literals header's formats
	// and the block size.
	for _, n := range []int{0, 1, 255, 256, 1023, 1024, 1025, 16383, 16384, 65791, 65792, 128 << 10, 128<<10 + 1, 400_000} {
		src := indexes(n)
		frame := literalFrame(nil, src, &s)
		got, err := plain.DecodeAll(frame, nil)
		if err != nil || !bytes.Equal(got, src) {
			t.Fatalf("%d bytes: decoded %d bytes, %v", n, len(got), err)
		}
		if n >= 16384 && len(frame) >= n {
			t.Errorf("%d bytes: a frame of %d bytes, no smaller", n, len(frame))
		}
	}
	// Bytes Huffman cannot shorten go in raw blocks.
	r := rand.New(rand.NewPCG(7, 8))
	noise := make([]byte, 200_000)
	for i := range noise {
		noise[i] = byte(r.Uint32())
	}
	frame := literalFrame(nil, noise, &s)
	if got, err := plain.DecodeAll(frame, nil); err != nil || !bytes.Equal(got, noise) {
		t.Fatalf("noise: decoded %d bytes, %v", len(got), err)
	}
}

// TestCodecCodesLiterals checks that a page of dictionary indexes comes out
// smaller than the Go zstd encoder alone writes it, and still decodes.
func TestCodecCodesLiterals(t *testing.T) {
	c, err := New()
	if err != nil {
		t.Fatal(err)
	}
	src := indexes(300_000)
	z, err := zstd.NewWriter(nil, zstd.WithWindowSize(window), zstd.WithAllLitEntropyCompression(true))
	if err != nil {
		t.Fatal(err)
	}
	alone := len(z.EncodeAll(src, nil))
	out := c.EncodeLevel(nil, src, 3)
	got, err := c.DecodeWithError(nil, out)
	if err != nil || !bytes.Equal(got, src) {
		t.Fatalf("decoded %d bytes, %v", len(got), err)
	}
	t.Logf("300,000 bytes of indexes: %d bytes by zstd alone, %d by the codec", alone, len(out))
	if len(out) > alone-alone/50 {
		t.Errorf("the codec wrote %d bytes, zstd alone %d: want at least 2 %% fewer", len(out), alone)
	}
}

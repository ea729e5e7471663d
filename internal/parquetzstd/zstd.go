// Package parquetzstd provides arrow-go's Parquet writer and reader with a
// zstd codec whose encoders are sized for Parquet pages.
//
// arrow-go's own codec takes its encoders from a sync.Pool, with zstd's
// default window of 8 MiB: every encoder allocates an 8 MiB history on the
// first page over 128 KiB it compresses, and each garbage collection may
// empty the pool, so that the next page allocates another. A page is at
// most a few MiB, so a window larger than that buys nothing; here it is
// 1 MiB, and idle encoders wait in a free list that collection leaves
// alone. The frames are ordinary zstd frames: any reader decodes them.
package parquetzstd

import (
	"fmt"
	"io"
	"sync"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/klauspost/compress/huff0"
	"github.com/klauspost/compress/zstd"
)

// window is the encoders' window: the longest distance back a match may
// reach, and about the history each encoder allocates.
const window = 1 << 20

// idle is the number of idle encoders kept per level.
const idle = 4

// Codec is the zstd codec. The zero value is not usable; see New.
type Codec struct {
	dec  *zstd.Decoder
	free map[zstd.EncoderLevel]chan *encoder
}

// An encoder compresses one page at a time.
type encoder struct {
	zstd *zstd.Encoder
	huff huff0.Scratch
	buf  []byte
}

// New returns a codec.
func New() (*Codec, error) {
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(0))
	if err != nil {
		return nil, err
	}
	c := &Codec{dec: dec, free: map[zstd.EncoderLevel]chan *encoder{}}
	for l := zstd.SpeedFastest; l <= zstd.SpeedBestCompression; l++ {
		c.free[l] = make(chan *encoder, idle)
	}
	return c, nil
}

// Register makes a codec of this package arrow-go's codec for zstd, in
// readers and writers alike, once per process: later calls only return
// the first one's error. arrow-go's registry is not safe for concurrent
// use, so the first call must come before any Parquet file is read or
// written on another goroutine; cold.New makes it.
func Register() error { return register() }

var register = sync.OnceValue(func() error {
	c, err := New()
	if err != nil {
		return fmt.Errorf("parquetzstd: %w", err)
	}
	compress.RegisterCodec(compress.Codecs.Zstd, c)
	return nil
})

// level returns the encoder level of a Parquet compression level, as
// arrow-go's codec maps it.
func level(l int) zstd.EncoderLevel {
	if l == compress.DefaultCompressionLevel {
		return zstd.SpeedDefault
	}
	return zstd.EncoderLevelFromZstd(l)
}

func (c *Codec) encoder(l zstd.EncoderLevel) *encoder {
	select {
	case e := <-c.free[l]:
		return e
	default:
	}
	// The options are arrow-go's, but for the window.
	z, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(l), zstd.WithWindowSize(window), zstd.WithEncoderConcurrency(1),
		zstd.WithZeroFrames(true), zstd.WithAllLitEntropyCompression(true))
	if err != nil {
		panic(err) // only for invalid options, which these are not
	}
	return &encoder{zstd: z}
}

func (c *Codec) release(l zstd.EncoderLevel, e *encoder) {
	select {
	case c.free[l] <- e:
	default:
	}
}

// Encode compresses src at the default level, appending to dst[:0].
func (c *Codec) Encode(dst, src []byte) []byte {
	return c.EncodeLevel(dst, src, compress.DefaultCompressionLevel)
}

// EncodeLevel compresses src at level, appending to dst[:0]. Where zstd
// found little to match, the page is also written as Huffman-coded
// literals alone (see literalFrame), and the smaller frame is returned.
func (c *Codec) EncodeLevel(dst, src []byte, lvl int) []byte {
	l := level(lvl)
	e := c.encoder(l)
	defer c.release(l, e)
	out := e.zstd.EncodeAll(src, dst[:0])
	if len(src) < 1<<10 || len(out) < len(src)-len(src)>>5 {
		return out
	}
	e.buf = literalFrame(e.buf[:0], src, &e.huff)
	if len(e.buf) < len(out) {
		out = append(out[:0], e.buf...)
	}
	return out
}

// CompressBound returns the largest compressed size of n bytes, as zstd
// bounds it.
func (c *Codec) CompressBound(n int64) int64 {
	extra := int64(0)
	if n < 128<<10 {
		extra = ((128 << 10) - n) >> 11
	}
	return n + n>>8 + extra
}

// Decode decompresses src, appending to dst[:0]; it panics on input that
// is not zstd, as arrow-go's Codec.Decode may.
func (c *Codec) Decode(dst, src []byte) []byte {
	out, err := c.DecodeWithError(dst, src)
	if err != nil {
		panic(err)
	}
	return out
}

// DecodeWithError decompresses src, appending to dst[:0].
func (c *Codec) DecodeWithError(dst, src []byte) ([]byte, error) {
	return c.dec.DecodeAll(src, dst[:0])
}

// NewReader returns a reader of the zstd stream r.
func (c *Codec) NewReader(r io.Reader) io.ReadCloser {
	d, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1))
	if err != nil {
		return io.NopCloser(errReader{err})
	}
	return d.IOReadCloser()
}

// NewWriter returns a writer that compresses to w at the default level.
func (c *Codec) NewWriter(w io.Writer) io.WriteCloser {
	e, _ := zstd.NewWriter(w, zstd.WithWindowSize(window))
	return e
}

// NewWriterLevel returns a writer that compresses to w at level.
func (c *Codec) NewWriterLevel(w io.Writer, lvl int) (io.WriteCloser, error) {
	return zstd.NewWriter(w, zstd.WithEncoderLevel(level(lvl)), zstd.WithWindowSize(window))
}

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }

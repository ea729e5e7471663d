package parquetzstd

import (
	"encoding/binary"

	"github.com/klauspost/compress/huff0"
)

// Bit-packed dictionary indexes, the bulk of a page of metered values,
// have next to no repeated strings for zstd to match, only skewed bytes:
// Huffman coding their literals saves about 4 %. The Go zstd encoder keeps
// literals raw unless Huffman saves a sixteenth (a threshold it does not
// let callers change), so it leaves such a page as large as it came;
// libzstd's threshold is a sixty-fourth. literalFrame writes the frame
// libzstd would: every block a Huffman-coded literals section and no
// sequences (RFC 8878, sections 3.1.1 and 3.1.1.3).

const (
	frameMagic   = 0xFD2FB528
	maxBlockSize = 128 << 10

	blockRaw        = 0
	blockCompressed = 2
	literalsHuffman = 2
)

// literalFrame appends to dst a zstd frame of src whose blocks hold
// Huffman-coded literals only, or raw bytes where Huffman coding saves
// nothing. s is scratch space.
func literalFrame(dst, src []byte, s *huff0.Scratch) []byte {
	dst = binary.LittleEndian.AppendUint32(dst, frameMagic)
	// Single segment: the frame content size stands for the window, so a
	// decoder allocates no more than the page.
	n := uint64(len(src))
	switch {
	case n < 256:
		dst = append(dst, 0<<6|1<<5, byte(n))
	case n < 256+1<<16:
		dst = append(dst, 1<<6|1<<5)
		dst = binary.LittleEndian.AppendUint16(dst, uint16(n-256))
	case n < 1<<32:
		dst = append(dst, 2<<6|1<<5)
		dst = binary.LittleEndian.AppendUint32(dst, uint32(n))
	default:
		dst = append(dst, 3<<6|1<<5)
		dst = binary.LittleEndian.AppendUint64(dst, n)
	}
	if len(src) == 0 {
		return appendBlockHeader(dst, true, blockRaw, 0)
	}
	for len(src) > 0 {
		block := src[:min(len(src), maxBlockSize)]
		src = src[len(block):]
		dst = appendBlock(dst, block, len(src) == 0, s)
	}
	return dst
}

// appendBlock appends block as a compressed block of literals, or raw
// where that is not smaller.
func appendBlock(dst, block []byte, last bool, s *huff0.Scratch) []byte {
	if len(block) < 1<<10 { // four streams of a few bytes buy nothing
		return append(appendBlockHeader(dst, last, blockRaw, len(block)), block...)
	}
	s.Reuse = huff0.ReusePolicyNone // every block carries its own table
	lits, _, err := huff0.Compress4X(block, s)
	if err != nil { // incompressible, or a single value (rare in a page)
		return append(appendBlockHeader(dst, last, blockRaw, len(block)), block...)
	}
	// The literals section header: type, size format and both sizes,
	// the smallest format that holds them (four streams).
	var sizeFormat, bits, headerLen int
	switch m := max(len(block), len(lits)); {
	case m < 1<<10:
		sizeFormat, bits, headerLen = 1, 10, 3
	case m < 1<<14:
		sizeFormat, bits, headerLen = 2, 14, 4
	default:
		sizeFormat, bits, headerLen = 3, 18, 5
	}
	size := headerLen + len(lits) + 1 // and a sequences section of zero sequences
	if size >= len(block) {
		return append(appendBlockHeader(dst, last, blockRaw, len(block)), block...)
	}
	dst = appendBlockHeader(dst, last, blockCompressed, size)
	h := uint64(literalsHuffman) | uint64(sizeFormat)<<2 | uint64(len(block))<<4 | uint64(len(lits))<<(4+bits)
	for i := range headerLen {
		dst = append(dst, byte(h>>(8*i)))
	}
	dst = append(dst, lits...)
	return append(dst, 0) // Number_of_Sequences: 0
}

// appendBlockHeader appends a block header: the last-block flag, the
// type and the size, little-endian in three bytes.
func appendBlockHeader(dst []byte, last bool, typ, size int) []byte {
	h := uint32(typ)<<1 | uint32(size)<<3
	if last {
		h |= 1
	}
	return append(dst, byte(h), byte(h>>8), byte(h>>16))
}

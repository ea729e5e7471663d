package series

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// TestParseDecimalDigits: ParseDecimal counts the digits in place as the
// padded concatenation of the integer and fraction parts would parse, for
// every length of either part, with and without a sign, at random digits.
func TestParseDecimalDigits(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 2))
	digits := func(n int) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte('0' + rng.IntN(10))
		}
		return string(b)
	}
	for ni := range 13 {
		for nf := range 7 {
			for _, sign := range []string{"", "-", "+"} {
				for range 20 {
					ip, fp := digits(ni), digits(nf)
					in := sign + ip
					if nf > 0 {
						in += "." + fp
					}
					if ni == 0 && nf == 0 {
						continue
					}
					want, _ := strconv.ParseInt(ip+fp+strings.Repeat("0", 6-nf), 10, 64)
					if sign == "-" {
						want = -want
					}
					if got, err := ParseDecimal(in); err != nil || int64(got) != want {
						t.Fatalf("ParseDecimal(%q) = %d, %v; want %d", in, got, err, want)
					}
				}
			}
		}
	}
}

//go:build !linux

package store

import (
	"fmt"
	"os"
)

// exchange swaps the files or directories at paths a and b through a
// third name: where the system has no atomic exchange, a look-up between
// the renames finds a missing.
func exchange(a, b string) error {
	tmp := a + ".exchange"
	for _, r := range [][2]string{{a, tmp}, {b, a}, {tmp, b}} {
		if err := os.Rename(r[0], r[1]); err != nil {
			return fmt.Errorf("exchange %s and %s: %w", a, b, err)
		}
	}
	return nil
}

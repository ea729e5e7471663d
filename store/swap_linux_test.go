package store

import "golang.org/x/sys/unix"

// exchange swaps the files or directories at paths a and b in one step,
// so that no one looking up either path ever finds it missing.
func exchange(a, b string) error {
	return unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
}

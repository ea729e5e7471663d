package pgcluster

import (
	"context"
	"log/slog"
)

// packagedMajor is the major version of the packaged binaries.
const packagedMajor = 17

// packaged returns the directory of the packaged server binaries.
func packaged(ctx context.Context, log *slog.Logger) (string, error) {
	return "", ErrNoBinaries
}

// Packaged reports whether the server runs on the packaged binaries.
func (c *Cluster) Packaged() bool { return false }

package store

import (
	"context"

	"github.com/meterstore/meterstore/internal/pgerr"
)

// PostgresServer describes the PostgreSQL server a store uses.
type PostgresServer struct {
	// Version is the server's, as it reports it (server_version).
	Version string
	// Private is set for the private server of data_dir/pg that
	// OpenConfig started or joined, when postgres.url is empty.
	Private bool
	// Binaries is the private server's bin directory, Packaged set when
	// they were fetched as a package rather than installed.
	Binaries string
	Packaged bool
}

// privateServer is what OpenConfig knows of the private server it
// started or joined.
type privateServer struct {
	bin      string
	packaged bool
}

// PostgresServer returns the version of the PostgreSQL server the store
// uses and, for the private server, which binaries run it.
func (s *Store) PostgresServer(ctx context.Context) (PostgresServer, error) {
	var ps PostgresServer
	if p := s.private; p != nil {
		ps.Private, ps.Binaries, ps.Packaged = true, p.bin, p.packaged
	}
	if err := s.opts.Pool.QueryRow(ctx, "SHOW server_version").Scan(&ps.Version); err != nil {
		return ps, pgerr.Classify("server version", "", err)
	}
	return ps, nil
}

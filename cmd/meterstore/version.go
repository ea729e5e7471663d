package main

import (
	"fmt"
	"runtime/debug"
)

// version describes the build: the module's version, the commit it was
// built from (vcs.revision, with "+changes" for a modified tree) and the
// Go release. A build without VCS stamping (go build -buildvcs=false, or
// outside a git checkout) says so rather than naming no commit silently.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown (no build information)"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, at, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			at = s.Value
		case "vcs.modified":
			modified = s.Value
		}
	}
	commit := "commit unknown (built without VCS stamping)"
	if rev != "" {
		commit = "commit " + rev
		if modified == "true" {
			commit += "+changes"
		}
		if at != "" {
			commit += " of " + at
		}
	}
	return fmt.Sprintf("%s, %s, %s", v, commit, bi.GoVersion)
}

package config

import (
	"path/filepath"
	"strings"
)

// The local directories of a deployment (postgres.data_dir, a file
// warehouse, query.cache_dir) are its own: MeterStore creates directories
// and files in them, replaces and removes its copies, spill files and
// orphans there, and a private cluster keeps its files there. A directory
// that belongs to the operating system is refused: the filesystem root,
// and everything in the hierarchies the Filesystem Hierarchy Standard gives
// to the system itself. Other top-level directories stay allowed, such as
// a volume mounted at /data in a container. The check reads the path as
// written, not where links lead: it stops a slip, not an intent.

// systemHierarchies are the FHS hierarchies of the operating system, with
// what each holds: programs, libraries, configuration, boot files and the
// kernel's virtual file systems.
var systemHierarchies = map[string]string{
	"/bin":    "programs",
	"/boot":   "the boot loader's files",
	"/dev":    "device files",
	"/etc":    "the system's configuration",
	"/lib":    "libraries",
	"/lib32":  "libraries",
	"/lib64":  "libraries",
	"/libx32": "libraries",
	"/proc":   "the kernel's view of processes",
	"/sbin":   "programs",
	"/sys":    "the kernel's view of devices",
	"/usr":    "installed programs and their data",
}

// ownDir records a problem at key if dir, an absolute path, is the root
// or lies in a system hierarchy.
func (r *reader) ownDir(key, dir string) {
	if filepath.Separator != '/' {
		return // the FHS is a Unix layout
	}
	dir = filepath.Clean(dir)
	if dir == "/" {
		r.errorf(key, "%q is the filesystem root: name a directory of the deployment's own, such as /var/lib/meterstore", dir)
		return
	}
	top, _, _ := strings.Cut(dir[1:], "/")
	if what, ok := systemHierarchies["/"+top]; ok {
		r.errorf(key, "%q is in /%s, which holds %s: name a directory of the deployment's own, such as /var/lib/meterstore",
			dir, top, what)
	}
}

# Sourced, not run: what the scripts that start a test server (s3server.sh,
# gcsserver.sh, azurite.sh, toxiproxy.sh) do alike. A script sets NAME (its
# log prefix), ADDR, STATE (a directory for the pid file and the path of the
# data directory) and PORT_VAR (the variable that moves the port), defines
# answers (the server answers on ADDR) and exports (the lines to eval), and
# may define taken (anything at all listens on ADDR; answers by default).
#
# Diagnostics go to stderr; stdout carries nothing but the export lines.

log() { echo "${NAME}: $*" >&2; }

taken() { answers; }

running() {
	[[ -f "${STATE}/pid" ]] && kill -0 "$(cat "${STATE}/pid")" 2>/dev/null
}

# stop stops the server this script started, if it runs, and removes its
# data directory and state.
stop() {
	if running; then
		kill "$(cat "${STATE}/pid")"
		log "stopped pid $(cat "${STATE}/pid")"
	fi
	if [[ -f "${STATE}/datadir" ]]; then
		rm -rf "$(cat "${STATE}/datadir")"
	fi
	rm -rf "${STATE}"
}

# go_build_once BIN MODULE@VERSION PROGRAM installs a Go program once into
# BIN, outside any module: the servers are never dependencies of
# MeterStore's go.mod. The version is part of BIN's name, so that bumping it
# rebuilds instead of reusing a stale binary.
go_build_once() {
	local bin=$1 pkg=$2 prog=$3 tmpbin
	[[ -x "${bin}" ]] && return 0
	log "building ${pkg} (about a minute, once)"
	tmpbin=$(mktemp -d)
	(cd "${tmpbin}" && GOBIN="${tmpbin}" GOFLAGS=-buildvcs=false go install "${pkg}") >&2
	mkdir -p "$(dirname "${bin}")"
	mv "${tmpbin}/${prog}" "${bin}"
	rm -rf "${tmpbin}"
}

# reuse_or_clear exports and exits if the server this script started still
# answers; otherwise it clears what is left of it, and fails when another
# process holds ADDR.
reuse_or_clear() {
	if running && answers; then
		log "reusing server pid $(cat "${STATE}/pid") on ${ADDR}"
		exports
		exit 0
	fi
	stop
	if taken; then
		log "${ADDR} is taken by a process this script did not start; set ${PORT_VAR}"
		exit 1
	fi
	mkdir -p "${STATE}"
}

# started records PID as the server's and waits, at most STEPS tenths of a
# second, for it to answer: then it exports and exits 0; if it dies or does
# not answer in time, it shows LOGFILE, stops it and exits 1.
started() {
	local pid=$1 steps=$2 logfile=$3 what=$4
	echo "${pid}" >"${STATE}/pid"
	for _ in $(seq 1 "${steps}"); do
		if answers; then
			log "pid ${pid} on ${ADDR}: ${what}"
			exports
			exit 0
		fi
		if ! running; then
			break
		fi
		sleep 0.1
	done
	log "server did not come up; its log:"
	cat "${logfile}" >&2
	stop
	exit 1
}

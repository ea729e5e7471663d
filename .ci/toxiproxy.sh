#!/usr/bin/env bash
# Starts Toxiproxy (Shopify's TCP fault-injecting proxy) for the network
# fault tests and prints the environment they need:
#
#     eval "$(.ci/toxiproxy.sh)"      # start (or reuse) and export
#     go test -race -run TestServeNetworkFaults ./cmd/meterstore
#     .ci/toxiproxy.sh stop           # stop it
#
# The tests create their proxies (127.0.0.1 to 127.0.0.1 only) and toxics
# through its HTTP API, which listens on 127.0.0.1 only. The server program
# is built once with go install into a cache outside the clone, not added
# to go.mod: the tests speak its HTTP API with net/http. Diagnostics go to
# stderr; stdout carries nothing but the export line, so the eval above is
# safe.
#
# Environment: MS_TOXIPROXY_PORT (default 8474), MS_CACHE_DIR (default
# $HOME/.cache/meterstore; the binary is installed under bin/).
set -euo pipefail

TOXIPROXY_VERSION=v2.12.0
PORT="${MS_TOXIPROXY_PORT:-8474}"
ADDR="127.0.0.1:${PORT}"
CACHE="${MS_CACHE_DIR:-${HOME}/.cache/meterstore}"
BIN="${CACHE}/bin/toxiproxy-server-${TOXIPROXY_VERSION}"
STATE="${CACHE}/toxiproxy-${PORT}"

log() { echo "toxiproxy: $*" >&2; }

exports() {
	echo "export MS_TEST_TOXIPROXY=http://${ADDR}"
}

answers() {
	curl -sf -o /dev/null -m 2 "http://${ADDR}/version"
}

running() {
	[[ -f "${STATE}/pid" ]] && kill -0 "$(cat "${STATE}/pid")" 2>/dev/null
}

stop() {
	if running; then
		kill "$(cat "${STATE}/pid")"
		log "stopped pid $(cat "${STATE}/pid")"
	fi
	rm -rf "${STATE}"
}

if [[ "${1:-start}" == stop ]]; then
	stop
	exit 0
fi

# The version is part of the binary's name so that bumping
# TOXIPROXY_VERSION rebuilds instead of reusing a stale binary.
if [[ ! -x "${BIN}" ]]; then
	log "building toxiproxy-server ${TOXIPROXY_VERSION} (about a minute, once)"
	tmpbin=$(mktemp -d)
	(cd "${tmpbin}" && GOFLAGS= GOBIN="${tmpbin}" \
		go install "github.com/Shopify/toxiproxy/v2/cmd/server@${TOXIPROXY_VERSION}") >&2
	mkdir -p "$(dirname "${BIN}")"
	mv "${tmpbin}/server" "${BIN}"
	rm -rf "${tmpbin}"
fi

if running && answers; then
	log "reusing server pid $(cat "${STATE}/pid") on ${ADDR}"
	exports
	exit 0
fi
stop
if answers; then
	log "${ADDR} is taken by a process this script did not start; set MS_TOXIPROXY_PORT"
	exit 1
fi

mkdir -p "${STATE}"
nohup "${BIN}" -host 127.0.0.1 -port "${PORT}" \
	>"${STATE}/server.log" 2>&1 </dev/null &
echo $! >"${STATE}/pid"

for _ in $(seq 1 100); do
	if answers; then
		log "toxiproxy-server ${TOXIPROXY_VERSION} pid $(cat "${STATE}/pid") on ${ADDR}"
		exports
		exit 0
	fi
	if ! running; then
		break
	fi
	sleep 0.1
done
log "server did not come up; its log:"
cat "${STATE}/server.log" >&2
stop
exit 1

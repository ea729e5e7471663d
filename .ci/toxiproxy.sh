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

NAME=toxiproxy
PORT_VAR=MS_TOXIPROXY_PORT
# shellcheck source=daemon.sh
source "$(dirname "$0")/daemon.sh"

exports() {
	echo "export MS_TEST_TOXIPROXY=http://${ADDR}"
}

answers() {
	curl -sf -o /dev/null -m 2 "http://${ADDR}/version"
}

if [[ "${1:-start}" == stop ]]; then
	stop
	exit 0
fi

go_build_once "${BIN}" "github.com/Shopify/toxiproxy/v2/cmd/server@${TOXIPROXY_VERSION}" server

reuse_or_clear

nohup "${BIN}" -host 127.0.0.1 -port "${PORT}" \
	>"${STATE}/server.log" 2>&1 </dev/null &
started $! 100 "${STATE}/server.log" "toxiproxy-server ${TOXIPROXY_VERSION}"

#!/usr/bin/env bash
# Starts a local Google Cloud Storage emulator (fake-gcs-server, memory
# backend) for the blob package's GCS tests and prints the environment they
# need:
#
#     eval "$(.ci/gcsserver.sh)"      # start (or reuse) and export
#     go test -race -run GCS ./blob/... ./consensus/bloblog/
#     .ci/gcsserver.sh stop           # stop it; its objects go with it
#
# The server speaks plain HTTP on 127.0.0.1 only. STORAGE_EMULATOR_HOST is
# how the Google client library, and so gocloud's gs:// driver, is pointed
# at an emulator; MS_TEST_GCS_ENDPOINT tells the tests that one is running.
# Diagnostics go to stderr; stdout carries nothing but the export lines, so
# the eval above is safe.
#
# Environment: MS_GCS_PORT (default 4443), MS_CACHE_DIR (default
# $HOME/.cache/meterstore; the binary is installed under bin/).
set -euo pipefail

FAKE_GCS_VERSION=v1.56.1
PORT="${MS_GCS_PORT:-4443}"
ADDR="127.0.0.1:${PORT}"
CACHE="${MS_CACHE_DIR:-${HOME}/.cache/meterstore}"
BIN="${CACHE}/bin/fake-gcs-server-${FAKE_GCS_VERSION}"
STATE="${CACHE}/gcsserver-${PORT}" # pid file and log

NAME=gcsserver
PORT_VAR=MS_GCS_PORT
# shellcheck source=daemon.sh
source "$(dirname "$0")/daemon.sh"

exports() {
	cat <<EOF
export MS_TEST_GCS_ENDPOINT=http://${ADDR}
export STORAGE_EMULATOR_HOST=${ADDR}
EOF
}

# answers reports whether a GCS JSON API answers on ADDR.
answers() {
	local code
	code=$(curl -s -o /dev/null -m 2 -w '%{http_code}' "http://${ADDR}/storage/v1/b" || true)
	[[ "${code}" == 200 ]]
}

# taken reports whether anything at all accepts connections on ADDR.
taken() {
	local code
	code=$(curl -s -o /dev/null -m 2 -w '%{http_code}' "http://${ADDR}/" || true)
	[[ "${code}" != "000" && -n "${code}" ]]
}

if [[ "${1:-start}" == stop ]]; then
	stop
	exit 0
fi

go_build_once "${BIN}" "github.com/fsouza/fake-gcs-server@${FAKE_GCS_VERSION}" fake-gcs-server

reuse_or_clear

# The memory backend keeps a flat key space, as GCS does; the filesystem
# backend maps keys onto paths, so "d" and "d/e" cannot both exist. The
# client library reads objects through the XML API, path-style
# (http://ADDR/bucket/key), which the emulator serves only for requests to
# its public host.
nohup "${BIN}" -scheme http -host 127.0.0.1 -port "${PORT}" \
	-backend memory -public-host "${ADDR}" -external-url "http://${ADDR}" \
	-log-level warn \
	>"${STATE}/server.log" 2>&1 </dev/null &
started $! 100 "${STATE}/server.log" "fake-gcs-server ${FAKE_GCS_VERSION}"

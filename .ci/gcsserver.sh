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

log() { echo "gcsserver: $*" >&2; }

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

# Installed as a program, outside any module: fake-gcs-server is never a
# dependency of MeterStore's go.mod. The version is part of the binary's
# name so that bumping FAKE_GCS_VERSION rebuilds.
if [[ ! -x "${BIN}" ]]; then
	log "building fake-gcs-server ${FAKE_GCS_VERSION} (about a minute, once)"
	tmpbin=$(mktemp -d)
	(cd "${tmpbin}" && GOBIN="${tmpbin}" GOFLAGS=-buildvcs=false \
		go install "github.com/fsouza/fake-gcs-server@${FAKE_GCS_VERSION}") >&2
	mkdir -p "$(dirname "${BIN}")"
	mv "${tmpbin}/fake-gcs-server" "${BIN}"
	rm -rf "${tmpbin}"
fi

if running && answers; then
	log "reusing server pid $(cat "${STATE}/pid") on ${ADDR}"
	exports
	exit 0
fi
stop
if taken; then
	log "${ADDR} is taken by a process this script did not start; set MS_GCS_PORT"
	exit 1
fi

mkdir -p "${STATE}"
# The memory backend keeps a flat key space, as GCS does; the filesystem
# backend maps keys onto paths, so "d" and "d/e" cannot both exist. The
# client library reads objects through the XML API, path-style
# (http://ADDR/bucket/key), which the emulator serves only for requests to
# its public host.
nohup "${BIN}" -scheme http -host 127.0.0.1 -port "${PORT}" \
	-backend memory -public-host "${ADDR}" -external-url "http://${ADDR}" \
	-log-level warn \
	>"${STATE}/server.log" 2>&1 </dev/null &
echo $! >"${STATE}/pid"

for _ in $(seq 1 100); do
	if answers; then
		log "fake-gcs-server ${FAKE_GCS_VERSION} pid $(cat "${STATE}/pid") on ${ADDR}"
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

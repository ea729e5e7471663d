#!/usr/bin/env bash
# Starts a local Azure Blob Storage emulator (Azurite, blob service only)
# for the blob package's Azure tests and prints the environment they need:
#
#     eval "$(.ci/azurite.sh)"        # start (or reuse) and export
#     go test -race -run Azure ./blob/... ./consensus/bloblog/
#     .ci/azurite.sh stop             # stop it and remove its data
#
# The server speaks plain HTTP on 127.0.0.1 only, with Azurite's well-known
# development account (devstoreaccount1 and its published key), and its
# telemetry off. AZURE_STORAGE_CONNECTION_STRING is how gocloud's azblob://
# driver, like the Azure SDKs, is given an account and its endpoint;
# MS_TEST_AZURE_ENDPOINT tells the tests that a server is running.
# Diagnostics go to stderr; stdout carries nothing but the export lines, so
# the eval above is safe.
#
# Environment: MS_AZURITE_PORT (default 10000), MS_CACHE_DIR (default
# $HOME/.cache/meterstore; Azurite is installed with npm under it). Needs
# node >= 20 and npm.
set -euo pipefail

AZURITE_VERSION=3.37.0
PORT="${MS_AZURITE_PORT:-10000}"
ADDR="127.0.0.1:${PORT}"
ACCOUNT=devstoreaccount1
# Azurite's fixed development key, published in its documentation; it
# opens nothing but a local emulator.
KEY='Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=='
CACHE="${MS_CACHE_DIR:-${HOME}/.cache/meterstore}"
PREFIX="${CACHE}/azurite-${AZURITE_VERSION}"
STATE="${CACHE}/azurite-${PORT}" # pid file and data dir path

NAME=azurite
PORT_VAR=MS_AZURITE_PORT
# shellcheck source=daemon.sh
source "$(dirname "$0")/daemon.sh"

exports() {
	cat <<EOF
export MS_TEST_AZURE_ENDPOINT=http://${ADDR}/${ACCOUNT}
export AZURE_STORAGE_CONNECTION_STRING='DefaultEndpointsProtocol=http;AccountName=${ACCOUNT};AccountKey=${KEY};BlobEndpoint=http://${ADDR}/${ACCOUNT};'
EOF
}

# answers reports whether anything speaks HTTP on ADDR. An unsigned request
# is refused, which is an answer all the same.
answers() {
	local code
	code=$(curl -s -o /dev/null -m 2 -w '%{http_code}' "http://${ADDR}/${ACCOUNT}?comp=list" || true)
	[[ "${code}" != "000" && -n "${code}" ]]
}

if [[ "${1:-start}" == stop ]]; then
	stop
	exit 0
fi

# Installed once per version into its own prefix, with no install scripts
# run: the blob service needs none.
BIN="${PREFIX}/node_modules/.bin/azurite-blob"
if [[ ! -x "${BIN}" ]]; then
	log "installing azurite ${AZURITE_VERSION} with npm (half a minute, once)"
	rm -rf "${PREFIX}.tmp"
	mkdir -p "${PREFIX}.tmp"
	npm install --prefix "${PREFIX}.tmp" --no-audit --no-fund --ignore-scripts \
		--loglevel error "azurite@${AZURITE_VERSION}" >&2
	rm -rf "${PREFIX}"
	mv "${PREFIX}.tmp" "${PREFIX}"
fi

reuse_or_clear
data=$(mktemp -d "${TMPDIR:-/tmp}/meterstore-azurite.XXXXXX")
echo "${data}" >"${STATE}/datadir"

# Azurite refuses a service version newer than it knows: the Azure SDK in
# go.mod (azblob v1.8.0 speaks 2026-06-06) must not outrun it, or the
# emulator would be judging requests it does not understand.
nohup "${BIN}" --blobHost 127.0.0.1 --blobPort "${PORT}" \
	--location "${data}" --silent --disableTelemetry \
	>"${data}/server.log" 2>&1 </dev/null &
started $! 150 "${data}/server.log" "azurite ${AZURITE_VERSION}, data ${data}"

#!/usr/bin/env bash
# Starts a local S3-compatible server (versitygw, posix backend) for the
# blob package's S3 tests and prints the environment they need:
#
#     eval "$(.ci/s3server.sh)"       # start (or reuse) and export
#     go test -race ./blob/...
#     .ci/s3server.sh stop            # stop it and remove its data
#
# The server listens on 127.0.0.1 only, with fixed test credentials. Its data
# lives in a fresh temporary directory. Diagnostics go to stderr; stdout
# carries nothing but the export lines, so the eval above is safe.
#
# Environment: MS_S3_PORT (default 7070), MS_CACHE_DIR (default
# $HOME/.cache/meterstore; the versitygw binary is installed under bin/).
set -euo pipefail

VERSITYGW_VERSION=v1.8.0
PORT="${MS_S3_PORT:-7070}"
ADDR="127.0.0.1:${PORT}"
ACCESS_KEY=meterstore-test
SECRET_KEY=meterstore-test-secret
REGION=us-east-1
CACHE="${MS_CACHE_DIR:-${HOME}/.cache/meterstore}"
BIN="${CACHE}/bin/versitygw-${VERSITYGW_VERSION}"
STATE="${CACHE}/s3server-${PORT}"   # pid file and data dir path

NAME=s3server
PORT_VAR=MS_S3_PORT
# shellcheck source=daemon.sh
source "$(dirname "$0")/daemon.sh"

exports() {
	cat <<EOF
export MS_TEST_S3_ENDPOINT=http://${ADDR}
export AWS_ACCESS_KEY_ID=${ACCESS_KEY}
export AWS_SECRET_ACCESS_KEY=${SECRET_KEY}
export AWS_REGION=${REGION}
EOF
}

# answers reports whether anything speaks HTTP on ADDR. An unsigned request
# is refused with 403, which is an answer all the same.
answers() {
	local code
	code=$(curl -s -o /dev/null -m 2 -w '%{http_code}' "http://${ADDR}/" || true)
	[[ "${code}" != "000" && -n "${code}" ]]
}

if [[ "${1:-start}" == stop ]]; then
	stop
	exit 0
fi

go_build_once "${BIN}" "github.com/versity/versitygw/cmd/versitygw@${VERSITYGW_VERSION}" versitygw

reuse_or_clear
data=$(mktemp -d "${TMPDIR:-/tmp}/meterstore-s3.XXXXXX")
echo "${data}" >"${STATE}/datadir"
mkdir -p "${data}/root"

# Object metadata stays in xattrs (the default), not in a --sidecar
# directory: v1.8.0 writes sidecar metadata, including the ETag that
# If-None-Match tests for, before it links the object's file, so a writer
# refused with 412 can find no object yet. Xattrs live on the inode and
# appear with the link. versitygw refuses to start on a file system without
# user xattrs; then point TMPDIR elsewhere.
nohup "${BIN}" --access "${ACCESS_KEY}" --secret "${SECRET_KEY}" \
	--region "${REGION}" --port "${ADDR}" --quiet \
	posix "${data}/root" \
	>"${data}/server.log" 2>&1 </dev/null &
started $! 100 "${data}/server.log" "versitygw ${VERSITYGW_VERSION}, data ${data}"

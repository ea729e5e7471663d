#!/usr/bin/env bash
# Trino 476 (server and CLI) from Maven Central for TestServeTrino, with
# the Java 25 it needs. Installed once into a cache directory outside the
# clone and reused when present; stdout carries nothing but the export
# lines the test reads, so that
#
#     eval "$(.ci/trino.sh)"
#
# is safe. Diagnostics go to stderr.
#
# Environment: MS_CACHE_DIR (default $HOME/.cache/meterstore-ci; Trino goes
# under trino-476/), MS_TRINO_JAVA_HOME (default: Temurin 25 where the CI
# image has it).
set -euo pipefail

TRINO_VERSION=476
CACHE="${MS_CACHE_DIR:-${HOME}/.cache/meterstore-ci}"
DIR="${CACHE}/trino-${TRINO_VERSION}"
MAVEN=https://repo1.maven.org/maven2/io/trino
JAVA_HOME_25="${MS_TRINO_JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}"

log() { echo "trino: $*" >&2; }

if [[ ! -x "${JAVA_HOME_25}/bin/java" ]]; then
	log "no Java at ${JAVA_HOME_25} (Trino ${TRINO_VERSION} needs Java 25; set MS_TRINO_JAVA_HOME)"
	exit 1
fi

# fetch downloads url to dest through a temporary name, so that an
# interrupted download is never taken for a finished one.
fetch() {
	local url=$1 dest=$2
	log "downloading ${url}"
	curl -fsSL --retry 3 -o "${dest}.part" "${url}"
	mv "${dest}.part" "${dest}"
}

mkdir -p "${DIR}"
if [[ ! -x "${DIR}/server/bin/launcher" ]]; then
	tarball="${DIR}/trino-server-${TRINO_VERSION}.tar.gz"
	[[ -f "${tarball}" ]] || fetch "${MAVEN}/trino-server/${TRINO_VERSION}/trino-server-${TRINO_VERSION}.tar.gz" "${tarball}"
	rm -rf "${DIR}/server.part"
	mkdir -p "${DIR}/server.part"
	tar -xzf "${tarball}" -C "${DIR}/server.part" --strip-components=1
	rm -rf "${DIR}/server"
	mv "${DIR}/server.part" "${DIR}/server"
	rm -f "${tarball}"
fi
cli="${DIR}/trino-cli-${TRINO_VERSION}-executable.jar"
[[ -f "${cli}" ]] || fetch "${MAVEN}/trino-cli/${TRINO_VERSION}/trino-cli-${TRINO_VERSION}-executable.jar" "${cli}"
log "Trino ${TRINO_VERSION} in ${DIR}"

cat <<EOF
export MS_TRINO_HOME=${DIR}/server
export MS_TRINO_CLI=${cli}
export MS_TRINO_JAVA_HOME=${JAVA_HOME_25}
EOF

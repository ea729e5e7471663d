#!/usr/bin/env bash
# pgjdbc, PostgreSQL's JDBC driver, from Maven Central for the wire
# protocol's client tests (cmd/meterstore/testdata/pgclients/Jdbc.java).
# Fetched once into a cache directory outside the clone, its SHA-1 checked
# against Maven Central's; stdout carries nothing but the export line the
# tests read, so that
#
#     eval "$(.ci/pgjdbc.sh)"
#
# is safe. Diagnostics go to stderr. Environment: MS_CACHE_DIR (default
# $HOME/.cache/meterstore-ci).
set -euo pipefail

VERSION=42.7.14
CACHE="${MS_CACHE_DIR:-${HOME}/.cache/meterstore-ci}"
JAR="${CACHE}/pgjdbc/postgresql-${VERSION}.jar"
URL="https://repo1.maven.org/maven2/org/postgresql/postgresql/${VERSION}/postgresql-${VERSION}.jar"

if [[ ! -s "${JAR}" ]]; then
	mkdir -p "$(dirname "${JAR}")"
	echo "pgjdbc: downloading ${URL}" >&2
	curl -fsSL --retry 3 -o "${JAR}.part" "${URL}"
	want=$(curl -fsSL --retry 3 "${URL}.sha1" | cut -c1-40)
	got=$(sha1sum "${JAR}.part" | cut -c1-40)
	if [[ "${want}" != "${got}" ]]; then
		echo "pgjdbc: ${URL}: SHA-1 ${got}, Maven Central says ${want}" >&2
		rm -f "${JAR}.part"
		exit 1
	fi
	mv "${JAR}.part" "${JAR}"
fi
echo "export MS_PGJDBC_JAR=${JAR}"

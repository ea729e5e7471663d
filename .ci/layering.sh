#!/usr/bin/env bash
# Holds the package layering of DESIGN.md: the tiers are peers that speak
# the public table model (series), config is plain values, nothing in the
# library imports the front door from below, the server wing reaches the
# tiers through the front door alone, and neither a tier nor the catalog
# speaks HTTP or leans on what lies under internal/.
set -euo pipefail
cd "$(dirname "$0")/.."
mod=github.com/meterstore/meterstore
fail=0
deps() { go list -deps -test "$@" 2>/dev/null | sort -u; }

for p in ./internal/cold ./internal/query ./internal/ingest; do
	if deps "$p" | grep -qx "$mod/internal/hot"; then
		echo "layering: $p depends on internal/hot"; fail=1
	fi
done
# The command goes through the front door; only its benchmark drivers,
# which measure the tiers themselves, use them directly.
if go list -f '{{join .Imports "\n"}}{{"\n"}}{{join .TestImports "\n"}}' ./cmd/meterstore | grep -qx "$mod/internal/hot"; then
	echo "layering: cmd/meterstore imports internal/hot"; fail=1
fi
if go list -deps ./config | grep -q "^$mod/internal/"; then
	echo "layering: config imports under internal/:"; go list -deps ./config | grep "^$mod/internal/"; fail=1
fi
for p in $(go list ./internal/...); do
	if go list -deps -test "$p" | grep -qx "$mod/store"; then
		echo "layering: $p imports store"; fail=1
	fi
done
# The server wing (cmd/meterstore/internal/server/...) is imported by the
# command that runs it alone: store, the library, the demo and the
# benchmark drivers stand below it. The result encoders (internal/resultfmt,
# internal/arrowrows) import no store, as every package under internal/.
wing="$mod/cmd/meterstore/internal/server/"
for p in $(go list ./...); do
	case "$p" in "$mod/cmd/meterstore" | "$wing"*) continue ;; esac
	if go list -f '{{join .Imports "\n"}}{{"\n"}}{{join .TestImports "\n"}}{{"\n"}}{{join .XTestImports "\n"}}' "$p" | grep -q "^$wing"; then
		echo "layering: $p imports the server wing"; fail=1
	fi
done
# The server wing reaches the tiers through the front door alone: it
# imports none of them, in its tests neither.
for p in $(go list ./cmd/meterstore/internal/server/...); do
	if go list -f '{{join .Imports "\n"}}{{"\n"}}{{join .TestImports "\n"}}{{"\n"}}{{join .XTestImports "\n"}}' "$p" | grep -qx "$mod/internal/\(hot\|cold\|archive\|query\)"; then
		echo "layering: $p imports a tier:"; go list -f '{{join .Imports "\n"}}{{"\n"}}{{join .TestImports "\n"}}{{"\n"}}{{join .XTestImports "\n"}}' "$p" | grep -x "$mod/internal/\(hot\|cold\|archive\|query\)"; fail=1
	fi
done
# No tier speaks HTTP: nothing under internal/ imports net/http outside
# its tests, but pgcluster, whose client fetches the packaged PostgreSQL
# binaries and serves nothing, and the test harnesses (internal/*test),
# which tests alone import; and nothing under internal/ depends on the
# REST server, catalog/rest.
for p in $(go list -f '{{.ImportPath}}{{range .Imports}}{{if eq . "net/http"}} net/http{{end}}{{end}}' ./internal/... | awk 'NF > 1 {print $1}'); do
	case "$p" in "$mod/internal/pgcluster" | "$mod/internal/"*test) continue ;; esac
	echo "layering: $p imports net/http"; fail=1
done
for p in $(go list -f '{{.ImportPath}}{{range .Deps}}{{if eq . "'"$mod"'/catalog/rest"}} rest{{end}}{{end}}' ./internal/... | awk 'NF > 1 {print $1}'); do
	echo "layering: $p depends on the REST server catalog/rest"; fail=1
done
# The catalog and its REST server depend on nothing of MeterStore's under
# internal/ outside their tests (the conformance suite catalog/catalogtest,
# which tests alone import, starts its backends with the test harnesses).
for p in $(go list ./catalog/...); do
	case "$p" in "$mod/catalog/catalogtest") continue ;; esac
	if go list -deps "$p" | grep -q "^$mod/internal/"; then
		echo "layering: $p depends on packages under internal/:"; go list -deps "$p" | grep "^$mod/internal/"; fail=1
	fi
done
# The harnesses the two rules above leave out (packages whose name ends in
# test) are imported by tests and by one another alone.
for p in $(go list ./...); do
	case "$p" in *test) continue ;; esac
	if go list -f '{{join .Imports "\n"}}' "$p" | grep -q "^$mod/.*test$"; then
		echo "layering: $p imports a test harness:"; go list -f '{{join .Imports "\n"}}' "$p" | grep "^$mod/.*test$"; fail=1
	fi
done
# The catalog carries no MeterStore semantics and serves nothing: its REST
# server is catalog/rest, and the readings views are the cold tier's.
if go list -f '{{join .Imports "\n"}}' ./catalog | grep -qx "net/http"; then
	echo "layering: catalog imports net/http"; fail=1
fi
if go list -deps ./catalog | grep -q "^$mod/\(series\|internal/\|store\)"; then
	echo "layering: catalog imports MeterStore's model:"; go list -deps ./catalog | grep "^$mod/\(series\|internal/\|store\)"; fail=1
fi
[ "$fail" = 0 ] && echo "layering: ok"
exit "$fail"

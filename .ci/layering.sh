#!/usr/bin/env bash
# Holds the package layering of DESIGN.md: the tiers are peers that speak
# the public table model (series), config is plain values, and nothing in
# the library imports the front door from below.
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

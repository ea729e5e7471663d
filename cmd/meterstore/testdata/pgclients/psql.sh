#!/usr/bin/env bash
# psql's catalog commands against a PostgreSQL port (libpq's PG* variables).
set -euo pipefail
psql -X -v ON_ERROR_STOP=1 -P pager=off -c '\dn' -c '\dt power.*' -c '\d power.readings'

"""Asks a running meterstore serve over Arrow Flight SQL with the Python
ADBC driver (adbc_driver_flightsql), as a notebook or BI tool would.

Called by cmd/meterstore's TestServeFlightSQL with the Flight SQL URI
(grpc+tls://127.0.0.1:port), the HTTP base URL, a bearer token of scope
query and the PEM file of the server's self-signed certificate, which both
clients trust. Checks that a cross-tier query (count and sum per day of power's
readings) read both tiers and equals POST /v1/query's answer, that a
prepared statement gives the same rows and its parameter schema, that
adbc_get_objects lists the tables (completeness too) with their columns, and that no token and a wrong token are
refused. Prints the per-day rows as one JSON line after "ROWS ", for the
Go test to compare with meterstore query. Exit status 0 means every check
passed.
"""

import json
import ssl
import sys
import urllib.request

import adbc_driver_flightsql
import adbc_driver_flightsql.dbapi
import adbc_driver_manager
import pyarrow

PER_DAY = """SELECT strftime("from", '%Y-%m-%d') AS day, count(*) AS n, sum(value)::VARCHAR AS total
FROM {}readings GROUP BY ALL ORDER BY day"""


# The server's certificate, which the clients trust: set by main.
CAFILE = None


def connect(uri, token):
    with open(CAFILE) as f:
        kwargs = {adbc_driver_flightsql.DatabaseOptions.TLS_ROOT_CERTS.value: f.read()}
    if token is not None:
        kwargs[adbc_driver_flightsql.DatabaseOptions.AUTHORIZATION_HEADER.value] = "Bearer " + token
    # Every statement reads a snapshot of its own: there are no transactions.
    return adbc_driver_flightsql.dbapi.connect(uri, db_kwargs=kwargs, autocommit=True)


def http_rows(base, token, sql):
    """The rows of POST /v1/query of sql over power, as JSON lines."""
    body = json.dumps({"table": "power", "sql": sql}).encode()
    req = urllib.request.Request(base + "/v1/query", data=body)
    req.add_header("Authorization", "Bearer " + token)
    req.add_header("Content-Type", "application/json")
    req.add_header("Accept", "application/x-ndjson")
    ctx = ssl.create_default_context(cafile=CAFILE)
    with urllib.request.urlopen(req, timeout=60, context=ctx) as resp:
        return [json.loads(line) for line in resp.read().decode().splitlines()]


def refused(uri, token, what):
    """Asserts that a query with token (None for none) is refused as
    unauthenticated."""
    try:
        with connect(uri, token) as conn, conn.cursor() as cur:
            cur.execute(PER_DAY.format("power."))
            cur.fetchall()
    except adbc_driver_manager.Error as err:
        text = str(err)
        assert "Unauthenticated" in text or "UNAUTHENTICATED" in text or "bearer token" in text, f"{what}: {text}"
        return
    raise AssertionError(f"{what}: the query was answered")


def main():
    global CAFILE
    uri, base, token, CAFILE = sys.argv[1:5]
    want = http_rows(base, token, PER_DAY.format(""))
    assert len(want) >= 2, f"POST /v1/query answered {want}: want at least two days"

    with connect(uri, token) as conn:
        with conn.cursor() as cur:
            cur.execute(PER_DAY.format("power."))
            table = cur.fetch_arrow_table()
        rows = table.to_pylist()
        assert rows == want, f"Flight SQL {rows}\n  != POST /v1/query {want}"
        meta = table.schema.metadata or {}
        tiers = meta.get(b"meterstore.tiers", b"").decode()
        assert tiers == "cold,hot", f"tiers read: {tiers!r}, metadata {meta}"

        # A prepared statement, executed twice; it has no parameters.
        with conn.cursor() as cur:
            sql = PER_DAY.format("meterstore.power.")
            params = cur.adbc_prepare(sql)
            assert params is not None and len(params) == 0, f"parameter schema without parameters: {params}"
            for _ in range(2):
                cur.execute(sql)
                got = cur.fetch_arrow_table().to_pylist()
                assert got == want, f"prepared statement {got} != {want}"

        # Bound parameters: the days from the second on, by a placeholder
        # whose value is bound, never written into the SQL.
        with conn.cursor() as cur:
            sql = "SELECT count(DISTINCT strftime(\"from\", '%Y-%m-%d')) AS days FROM power.readings WHERE \"from\" >= ?"
            params = cur.adbc_prepare(sql)
            assert params is not None and params.names == ["1"], f"parameter schema of one ?: {params}"
            cur.execute(sql, parameters=(want[1]["day"] + "T00:00:00Z",))
            days = cur.fetch_arrow_table().to_pylist()
            assert days == [{"days": len(want) - 1}], f"bound parameter: {days}, want {len(want) - 1} days"

        # GetTables, through adbc_get_objects: the catalog, power's
        # relations with their columns, and the system tables.
        objects = conn.adbc_get_objects().read_all().to_pylist()
        catalogs = {c["catalog_name"]: c for c in objects}
        assert "meterstore" in catalogs, f"catalogs: {list(catalogs)}"
        schemas = {s["db_schema_name"]: s for s in catalogs["meterstore"]["catalog_db_schemas"]}
        assert {"power", "gas", "system"} <= set(schemas), f"db_schemas: {list(schemas)}"
        power = {t["table_name"]: t for t in schemas["power"]["db_schema_tables"]}
        assert set(power) == {"readings", "readings_versions", "completeness"}, f"power's tables: {list(power)}"
        columns = [c["column_name"] for c in power["readings"]["table_columns"]]
        assert "malo_id" in columns and "value" in columns, f"power.readings' columns: {columns}"
        system = {t["table_name"] for t in schemas["system"]["db_schema_tables"]}
        assert "tables" in system, f"system tables: {system}"
        only = conn.adbc_get_objects(depth="tables", db_schema_filter="power", table_types_filter=["TABLE"])
        names = sorted(t["table_name"] for c in only.read_all().to_pylist() for s in c["catalog_db_schemas"] or []
                       for t in s["db_schema_tables"] or [])
        assert names == ["completeness", "readings", "readings_versions"], f"tables of power: {names}"

    refused(uri, None, "no token")
    refused(uri, "not-a-token", "a wrong token")
    print("ROWS " + json.dumps(rows))
    print(f"flight sql: {len(rows)} days over {tiers}, prepared statement, parameter schemas, bound parameters, get_objects, refusals: ok")


if __name__ == "__main__":
    main()

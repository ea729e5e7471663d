"""Reads an archived table through the Iceberg REST catalog of a running
meterstore serve, as foreign engines do: PyIceberg's RestCatalog with a
client credential (the table and its readings view), and DuckDB's
iceberg extension with an OAuth2 secret, its extensions loaded offline
from the duckdb-ext-* wheels.

Called by cmd/meterstore's TestServeCatalog with a JSON file naming the
server, the catalog's URI, a client id and secret (a token of scope
catalog), a token of scope query, and the table. Each client's counts and
sums per day must equal those of POST /v1/query over readings_versions,
and every client is refused without a valid token. Exit status 0 means
every check passed.
"""

import datetime
import decimal
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request


def request(url, token=None, data=None, form=None):
    """The status and decoded JSON body of a request; an empty body is None."""
    headers = {}
    if token:
        headers["Authorization"] = "Bearer " + token
    if form is not None:
        data = urllib.parse.urlencode(form).encode()
        headers["Content-Type"] = "application/x-www-form-urlencoded"
    elif data is not None:
        data = json.dumps(data).encode()
        headers["Content-Type"] = "application/json"
    req = urllib.request.Request(url, data=data, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            status, body = resp.status, resp.read()
    except urllib.error.HTTPError as err:
        status, body = err.code, err.read()
    return status, (json.loads(body) if body.strip() else None)


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok:", what)


def meterstore_days(spec):
    """Count and sum per day of readings_versions, by POST /v1/query."""
    sql = ("SELECT strftime(\"from\" AT TIME ZONE 'UTC', '%Y-%m-%d') AS day, count(*) AS n, "
           "sum(value) AS s FROM readings_versions GROUP BY 1 ORDER BY 1")
    req = urllib.request.Request(
        spec["base"] + "/v1/query", data=json.dumps({"table": spec["table"], "sql": sql}).encode(),
        headers={"Authorization": "Bearer " + spec["query_token"], "Content-Type": "application/json",
                 "Accept": "application/x-ndjson"})
    with urllib.request.urlopen(req, timeout=60) as resp:
        lines = resp.read().decode().splitlines()
    out = {}
    for line in lines:
        row = json.loads(line, parse_float=decimal.Decimal)
        out[row["day"]] = (int(row["n"]), decimal.Decimal(str(row["s"])))
    return out


def arrow_days(tbl):
    """Count and sum per day of a pyarrow table of readings."""
    out = {}
    for frm, value in zip(tbl.column("from").to_pylist(), tbl.column("value").to_pylist()):
        day = frm.astimezone(datetime.timezone.utc).strftime("%Y-%m-%d")
        n, s = out.get(day, (0, decimal.Decimal(0)))
        out[day] = (n + 1, s + decimal.Decimal(str(value)))
    return out


def same(got, want, who):
    check(sorted(got) == sorted(want), f"{who}: the days {sorted(got)} are MeterStore's {sorted(want)}")
    for day, (n, s) in want.items():
        gn, gs = got[day]
        check(gn == n and abs(decimal.Decimal(gs) - s) < decimal.Decimal("0.000001"),
              f"{who}: {day}: {gn} rows, sum {gs}; MeterStore {n}, {s}")


def refusals(spec):
    uri = spec["catalog_uri"]
    status, body = request(uri + "/v1/config")
    check(status == 401 and body["error"]["type"] == "NotAuthorizedException", f"no token: {status} {body}")
    status, body = request(uri + "/v1/namespaces", token=spec["secret"] + "x")
    check(status == 401 and body["error"]["code"] == 401, f"a wrong token: {status} {body}")
    status, body = request(uri + "/v1/config", token=spec["query_token"])
    check(status == 403 and body["error"]["type"] == "ForbiddenException", f"a token of scope query: {status} {body}")
    status, body = request(uri + "/v1/oauth/tokens", form={
        "grant_type": "client_credentials", "client_id": spec["client_id"], "client_secret": "wrong"})
    check(status == 401 and body["error"] == "invalid_client", f"a wrong client secret: {status} {body}")
    status, body = request(uri + "/v1/oauth/tokens", form={
        "grant_type": "client_credentials", "client_id": spec["client_id"], "client_secret": spec["secret"],
        "scope": "catalog"})
    check(status == 200 and body["token_type"] == "bearer" and 0 < body["expires_in"] <= 86400,
          f"the client credentials: {status} {body}")
    print("access token:", body["access_token"])
    status, body = request(uri + "/v1/config", token=body["access_token"])
    check(status == 200 and "GET /v1/{prefix}/namespaces/{namespace}/tables/{table}" in body["endpoints"],
          f"config with the access token: {status} {body}")
    status, body = request(uri + "/v1/namespaces/meterstore%1Fpower/tables/snapshots", token=spec["secret"])
    check(status == 404 and body["error"]["type"] == "NoSuchTableException", f"a metadata table's name: {status} {body}")


def pyiceberg_reads(spec, want):
    from pyiceberg.catalog import load_catalog
    from pyiceberg.exceptions import OAuthError

    uri, ns, name = spec["catalog_uri"], spec["namespace"], spec["table"]
    try:
        load_catalog("bad", type="rest", uri=uri, credential=spec["client_id"] + ":wrong").list_namespaces()
        check(False, "PyIceberg with a wrong credential was refused")
    except OAuthError as err:
        check("invalid_client" in str(err), f"PyIceberg with a wrong credential: {err}")
    try:
        load_catalog("none", type="rest", uri=uri).list_namespaces()
        check(False, "PyIceberg without a credential was refused")
    except Exception as err:  # pyiceberg raises its Unauthorized for a 401
        # PyIceberg sends "Authorization: Bearer None": told, as curl
        # without a header is, that a token is required.
        check(type(err).__name__ in ("UnauthorizedError", "NotAuthorizedError")
              and "a bearer token is required" in str(err), f"PyIceberg without a credential: {type(err).__name__}: {err}")

    cat = load_catalog("meterstore", type="rest", uri=uri, credential=spec["client_id"] + ":" + spec["secret"])
    check((ns,) in cat.list_namespaces(), f"PyIceberg lists namespace {ns}")
    check((ns, name) in cat.list_tables(ns), f"PyIceberg lists {ns}.{name}")
    check(not cat.table_exists(f"{ns}.{name}.snapshots"), "PyIceberg: a metadata table's name is no table")
    tbl = cat.load_table(f"{ns}.{name}")
    snaps = tbl.snapshots()
    check(len(snaps) >= 1 and tbl.current_snapshot() is not None, f"PyIceberg: {len(snaps)} snapshots")
    check(tbl.inspect.snapshots().num_rows == len(snaps), "PyIceberg reads the snapshots metadata table")
    check(tbl.properties.get("gc.enabled") == "false", f"PyIceberg: properties {tbl.properties}")
    data = tbl.scan().to_arrow()
    check(data.num_rows == spec["days"] * spec["rows_a_day"], f"PyIceberg scans {data.num_rows} rows")
    same(arrow_days(data), want, "PyIceberg")

    # The readings view: listed, found and loaded with its SQL, its
    # columns (the table's without superseded) and the table's watermark.
    view = f"{name}_readings"
    check((ns, view) in cat.list_views(ns), f"PyIceberg lists view {ns}.{view}")
    check(cat.view_exists(f"{ns}.{view}") and not cat.view_exists(f"{ns}.nothing_readings"),
          f"PyIceberg finds view {ns}.{view}, and no other")
    v = cat.load_view(f"{ns}.{view}")
    dialects = {r.root.dialect: r.root.sql for r in v.current_version().representations}
    check(sorted(dialects) == ["duckdb", "spark", "trino"] and f"`{ns}`.`{name}`" in dialects["spark"],
          f"PyIceberg loads view {ns}.{view}: dialects {sorted(dialects)}")
    cols = [f.name for f in v.schema().fields]
    want_cols = [f.name for f in tbl.schema().fields if f.name != "superseded"]
    check(cols == want_cols, f"PyIceberg: the view's columns are the table's without superseded: {cols}")
    w = tbl.current_snapshot().summary["meterstore.watermark"]
    check(v.metadata.properties.get("meterstore.watermark") == w,
          f"PyIceberg: the view's watermark is the current snapshot's, {w}")

    # An append writes its files, then its commit is refused; the files
    # stay (docs/foreign-engines.md says so). Writing a partitioned table
    # takes pyiceberg-core.
    was = files(spec)
    try:
        tbl.append(data.slice(0, 1))
        err = None
    except Exception as e:  # pyiceberg raises NotImplementedError for an endpoint not offered
        err = e
    left = files(spec) - was
    print(f"refused: PyIceberg append ({left} new files) | {type(err).__name__}: {err}", flush=True)
    check(err is not None and "Server does not support endpoint" in str(err) and left > 0,
          f"PyIceberg's append is refused after writing {left} files")
    check(cat.load_table(f"{ns}.{name}").current_snapshot().snapshot_id == tbl.current_snapshot().snapshot_id,
          "PyIceberg: the table is as it was after the refused append")


def files(spec):
    """The number of files in the warehouse."""
    return sum(len(fs) for _, _, fs in os.walk(spec["warehouse"]))


def duckdb_connect():
    """A DuckDB connection with the extensions iceberg, avro and httpfs of
    the wheels loaded, offline: never a download."""
    import duckdb
    import duckdb_ext

    ext_dir = os.path.join(list(duckdb_ext.__path__)[0], "extensions")
    con = duckdb.connect(config={"extension_directory": ext_dir, "autoinstall_known_extensions": "false",
                                 "allow_community_extensions": "false"})
    for ext in ("httpfs", "avro", "iceberg"):
        con.execute(f"LOAD {ext}")
    return con


def duckdb_doc(spec, want):
    """docs/foreign-engines.md's statements, one after another: the last
    counts every row."""
    con = duckdb_connect()
    rows = None
    for stmt in spec["duckdb_doc"].split(";"):
        if stmt.strip():
            rows = con.execute(stmt).fetchall()
    total = sum(n for n, _ in want.values())
    check(rows == [(total,)], f"DuckDB, the document's statements: {rows}; MeterStore holds {total} rows")


def duckdb_reads(spec, want):
    import duckdb

    con = duckdb_connect()
    uri, ns, name = spec["catalog_uri"], spec["namespace"], spec["table"]
    con.execute("SET TimeZone = 'UTC'")

    # Refused with a wrong secret: DuckDB asks for the token as it
    # creates the secret.
    try:
        con.execute(f"""CREATE SECRET bad (TYPE iceberg, CLIENT_ID '{spec["client_id"]}', CLIENT_SECRET 'wrong',
            OAUTH2_SERVER_URI '{uri}/v1/oauth/tokens')""")
        con.execute(f"ATTACH 'warehouse' AS bad (TYPE iceberg, SECRET bad, ENDPOINT '{uri}')")
        con.execute(f"SELECT count(*) FROM bad.{ns}.{name}").fetchall()
        check(False, "DuckDB with a wrong secret was refused")
    except duckdb.Error as err:
        check("Could not get token" in str(err), f"DuckDB with a wrong secret: {err}")
    # Refused without a token: an attach with no secret at all.
    try:
        con.execute(f"ATTACH 'warehouse' AS anon (TYPE iceberg, ENDPOINT '{uri}', AUTHORIZATION_TYPE 'none')")
        con.execute(f"SELECT count(*) FROM anon.{ns}.{name}").fetchall()
        check(False, "DuckDB without a token was refused")
    except duckdb.Error as err:
        check("401" in str(err) or "nauthori" in str(err), f"DuckDB without a token: {err}")

    con.execute(f"""CREATE SECRET ms (TYPE iceberg, CLIENT_ID '{spec["client_id"]}',
        CLIENT_SECRET '{spec["secret"]}', OAUTH2_SERVER_URI '{uri}/v1/oauth/tokens')""")
    con.execute(f"ATTACH 'warehouse' AS ms (TYPE iceberg, SECRET ms, ENDPOINT '{uri}')")
    tables = con.execute("SELECT schema_name, table_name FROM duckdb_tables() WHERE database_name = 'ms'").fetchall()
    check((ns, name) in tables, f"DuckDB lists {ns}.{name}: {tables}")
    rows = con.execute(f"""SELECT strftime("from", '%Y-%m-%d') AS day, count(*), sum(value)
        FROM ms.{ns}.{name} GROUP BY 1 ORDER BY 1""").fetchall()
    same({d: (n, decimal.Decimal(str(s))) for d, n, s in rows}, want, "DuckDB")
    snaps = con.execute(f"SELECT count(*) FROM iceberg_snapshots(ms.{ns}.{name})").fetchone()[0]
    check(snaps >= 1, f"DuckDB reads {snaps} snapshots")

    # DuckDB 1.4.4 loads no views from the catalog, but runs the readings
    # view's duckdb SQL over the attached table. Every reading here has
    # one version: the view holds them all.
    views = con.execute("SELECT view_name FROM duckdb_views() WHERE database_name = 'ms'").fetchall()
    print("info: DuckDB lists the views", views, flush=True)
    status, body = request(f"{uri}/v1/namespaces/{ns}/views/{name}_readings", token=spec["secret"])
    check(status == 200, f"the view {ns}.{name}_readings: {status}")
    sql = next(r["sql"] for r in body["metadata"]["versions"][0]["representations"] if r["dialect"] == "duckdb")
    con.execute(f"USE ms.{ns}")
    rows = con.execute(f"""SELECT strftime("from", '%Y-%m-%d') AS day, count(*), sum(value)
        FROM ({sql}) GROUP BY 1 ORDER BY 1""").fetchall()
    same({d: (n, decimal.Decimal(str(s))) for d, n, s in rows}, want, "DuckDB, the view's SQL")


def main():
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    want = meterstore_days(spec)
    check(len(want) == spec["days"] and all(n == spec["rows_a_day"] for n, _ in want.values()),
          f"MeterStore answers {want}")
    refusals(spec)
    pyiceberg_reads(spec, want)
    duckdb_reads(spec, want)
    duckdb_doc(spec, want)


if __name__ == "__main__":
    main()

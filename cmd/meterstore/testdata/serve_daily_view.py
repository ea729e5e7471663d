"""Reads the daily rollup of a running meterstore serve and its view in
PyIceberg and DuckDB, for cmd/meterstore's TestDailyViewEngines.

    serve_daily_view.py spec.json

The spec names the catalog's URI, a client id and secret (a token of
scope catalog), the rollup's namespace and table. PyIceberg lists and
loads the view <table>_daily, scans the rollup table and keeps, of each
series' day, the rows of its highest rollup_version, as the view says;
DuckDB 1.4.4, which loads no views from a REST catalog, runs the view's
duckdb SQL over the attached table. The last line is a JSON object of
each reader's rows (malo_id, balancing_day, sparte, resolution, unit,
expected, present, on_grid, value_sum, max_version as text), which the
test compares with MeterStore's relation daily.
"""

import json
import os
import sys

COLS = ["malo_id", "balancing_day", "sparte", "resolution", "unit", "expected", "present", "on_grid", "value_sum", "max_version"]


def check(ok, what):
    if not ok:
        raise SystemExit("FAILED: " + what)


def pyiceberg_rows(spec):
    from pyiceberg.catalog import load_catalog

    ns, name = spec["namespace"], spec["table"]
    cat = load_catalog("meterstore", type="rest", uri=spec["catalog_uri"], credential=spec["client_id"] + ":" + spec["secret"])
    view = f"{name}_daily"
    check((ns, view) in cat.list_views(ns), f"PyIceberg lists view {ns}.{view}: {cat.list_views(ns)}")
    v = cat.load_view(f"{ns}.{view}")
    dialects = {r.root.dialect: r.root.sql for r in v.current_version().representations}
    check(sorted(dialects) == ["duckdb", "spark", "trino"], f"PyIceberg loads view {ns}.{view}: dialects {sorted(dialects)}")
    tbl = cat.load_table(f"{ns}.{name}")
    check([f.name for f in v.schema().fields] == [f.name for f in tbl.schema().fields if f.name != "rollup_version"],
          "the view's columns are the rollup's without rollup_version")
    w = tbl.current_snapshot().summary["meterstore.watermark"]
    check(v.metadata.properties.get("meterstore.watermark") == w, f"the view's watermark is the rollup's, {w}")
    rows = tbl.scan().to_arrow().to_pylist()
    names = [f.name for f in tbl.schema().fields]
    key = names[:names.index("balancing_day") + 1]
    top = {}
    for r in rows:
        k = tuple(r[c] for c in key)
        top[k] = max(top.get(k, r["rollup_version"]), r["rollup_version"])
    return [[text(r[c]) for c in COLS] for r in rows if r["rollup_version"] == top[tuple(r[c] for c in key)]], dialects["duckdb"]


def duckdb_rows(spec, sql):
    import duckdb
    import duckdb_ext

    ext_dir = os.path.join(list(duckdb_ext.__path__)[0], "extensions")
    con = duckdb.connect(config={"extension_directory": ext_dir, "autoinstall_known_extensions": "false",
                                 "allow_community_extensions": "false", "threads": 2})
    for ext in ("httpfs", "avro", "iceberg"):
        con.execute(f"LOAD {ext}")
    con.execute("SET TimeZone = 'UTC'")
    uri = spec["catalog_uri"]
    con.execute(f"""CREATE SECRET ms (TYPE iceberg, CLIENT_ID '{spec["client_id"]}',
        CLIENT_SECRET '{spec["secret"]}', OAUTH2_SERVER_URI '{uri}/v1/oauth/tokens')""")
    con.execute(f"ATTACH 'warehouse' AS ms (TYPE iceberg, SECRET ms, ENDPOINT '{uri}')")
    con.execute(f"USE ms.{spec['namespace']}")
    cur = con.execute("SELECT " + ", ".join(f'"{c}"' for c in COLS) + f" FROM ({sql}) AS v")
    return [[text(v) for v in r] for r in cur.fetchall()]


def text(v):
    return "" if v is None else str(v)


def main():
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    py, sql = pyiceberg_rows(spec)
    print(json.dumps({"pyiceberg": py, "duckdb": duckdb_rows(spec, sql)}), flush=True)


if __name__ == "__main__":
    main()

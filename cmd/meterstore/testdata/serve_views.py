"""Times the readings view of a running meterstore serve in Spark or DuckDB
against the same engine's plain aggregate over the table's current rows.

Called by cmd/meterstore's TestReadingsViewEngines with a JSON file naming
the catalog's URI and name, a client id and secret (a token of scope
catalog), the namespace, the table and the watermark W, then the engine
(spark or duckdb) and, for Spark, the iceberg-spark-runtime jar:

    serve_views.py spec.json spark|duckdb [jar]

Each engine reads through the REST catalog as a user would: Spark loads
the view <table>_readings from it; DuckDB 1.4.4, which loads no views from
a REST catalog, runs the view's duckdb SQL over the attached table. The
per-meter monthly total through the view and the plain one (WHERE
superseded = false, which misses late corrections) run alternately three
times after a warm-up of each. The same total is taken once over each of
system.resolution's statements in the engine's dialect (the spec's
"resolution", by dialect and setting), run in the table's namespace as a
user pastes them. In the same session the engine reads, of each rollup
table the spec's "daily" names (its namespace, tables and columns), the
daily view <table>_daily and the table itself, each of its rows with its
rollup_version. The last line is a JSON object: the engine, the times of
each in seconds, the view's rows (malo_id, month, count, sum as text),
each statement's, and the daily view's and rollup table's rows (as text),
which the test compares with MeterStore's.
"""

import json
import os
import sys
import time
import urllib.request


def view_sql(spec, dialect, namespace=None, view=None):
    """The SQL in dialect of a view (by default the readings view), from the catalog's view endpoint."""
    namespace = namespace or spec["namespace"]
    view = view or spec["table"] + "_readings"
    uri = spec["catalog_uri"]
    form = f"grant_type=client_credentials&client_id={spec['client_id']}&client_secret={spec['secret']}&scope=catalog"
    with urllib.request.urlopen(urllib.request.Request(uri + "/v1/oauth/tokens", data=form.encode()), timeout=60) as resp:
        token = json.load(resp)["access_token"]
    req = urllib.request.Request(f"{uri}/v1/namespaces/{namespace}/views/{view}",
                                 headers={"Authorization": "Bearer " + token})
    with urllib.request.urlopen(req, timeout=60) as resp:
        body = json.load(resp)
    version = body["metadata"]["versions"][-1]
    return next(r["sql"] for r in version["representations"] if r["dialect"] == dialect)


def spark_engine(spec, jar):
    """A query function of a local Spark session on both cores, and a plan function."""
    from serve_spark import local_builder

    c = "spark.sql.catalog." + spec["catalog"]
    uri = spec["catalog_uri"]
    spark = (
        local_builder(jar, "meterstore-views", "local[2]")
        .config("spark.driver.memory", "2g")
        .config(c, "org.apache.iceberg.spark.SparkCatalog")
        .config(c + ".type", "rest")
        .config(c + ".uri", uri)
        .config(c + ".rest.auth.type", "oauth2")
        .config(c + ".oauth2-server-uri", uri + "/v1/oauth/tokens")
        .config(c + ".credential", spec["client_id"] + ":" + spec["secret"])
        .config(c + ".scope", "catalog")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    ns = f"{spec['catalog']}.{spec['namespace']}"
    view, table = f"{ns}.{spec['table']}_readings", f"{ns}.{spec['table']}"
    monthly = "SELECT malo_id, date_format(`from`, 'yyyy-MM') AS month, count(*) AS n, CAST(sum(value) AS STRING) AS s FROM {} GROUP BY 1, 2"
    queries = {"view": monthly.format(view),
               "plain": monthly.format(f"(SELECT * FROM {table} WHERE superseded = false)")}
    for setting, stmt in spec["resolution"]["spark"].items():
        queries[setting] = monthly.format(f"({stmt}) r")
    daily = spec["daily"]
    for name in daily["tables"]:
        rel = f"{spec['catalog']}.{daily['namespace']}.{name}"
        cols = ", ".join(f"CAST(`{c}` AS STRING)" for c in daily["columns"])
        queries["daily-view:" + name] = f"SELECT {cols} FROM {rel}_daily"
        queries["daily-table:" + name] = f"SELECT {cols}, CAST(rollup_version AS STRING) FROM {rel}"
    # system.resolution names the table alone, as in its namespace.
    spark.sql(f"USE {ns}")

    def run(name):
        return [tuple(r) for r in spark.sql(queries[name]).collect()]

    def plan():
        text = spark.sql("EXPLAIN FORMATTED " + queries["view"]).collect()[0][0]
        return text.split("\n\n")[0]
    return run, plan


def duckdb_engine(spec):
    """A query function of DuckDB attached to the catalog, on both cores, and a plan function."""
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
    # The view's SQL names the namespace and the table only: the attached
    # catalog's name does not matter, and one unlike the namespace's keeps
    # "namespace"."table" unambiguous.
    con.execute(f"ATTACH 'warehouse' AS ms (TYPE iceberg, SECRET ms, ENDPOINT '{uri}')")
    con.execute(f"USE ms.{spec['namespace']}")
    monthly = "SELECT malo_id, strftime(\"from\", '%Y-%m') AS month, count(*) AS n, CAST(sum(value) AS VARCHAR) AS s FROM {} GROUP BY 1, 2"
    queries = {"view": monthly.format(f"({view_sql(spec, 'duckdb')})"),
               "plain": monthly.format(f"(SELECT * FROM \"{spec['table']}\" WHERE superseded = false)")}
    for setting, stmt in spec["resolution"]["duckdb"].items():
        queries[setting] = monthly.format(f"({stmt}) r")
    daily = spec["daily"]
    for name in daily["tables"]:
        cols = ", ".join(f'CAST("{c}" AS VARCHAR)' for c in daily["columns"])
        queries["daily-view:" + name] = f"SELECT {cols} FROM ({view_sql(spec, 'duckdb', daily['namespace'], name + '_daily')}) v"
        queries["daily-table:" + name] = f"SELECT {cols}, CAST(rollup_version AS VARCHAR) FROM \"{daily['namespace']}\".\"{name}\""

    def run(name):
        return [tuple(r) for r in con.execute(queries[name]).fetchall()]

    def plan():
        return con.execute("EXPLAIN " + queries["view"]).fetchall()[0][1]
    return run, plan


def main():
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    engine = sys.argv[2]
    start = time.monotonic()
    run, plan = spark_engine(spec, sys.argv[3]) if engine == "spark" else duckdb_engine(spec)
    print(f"{engine}: ready in {time.monotonic() - start:.1f}s", flush=True)
    rows = run("view")
    run("plain")
    times = {"view": [], "plain": []}
    for _ in range(3):
        for name in ("view", "plain"):
            begin = time.monotonic()
            run(name)
            times[name].append(time.monotonic() - begin)
    resolved = {setting: [[str(v) for v in r] for r in run(setting)] for setting in spec["resolution"][engine]}
    begin = time.monotonic()
    daily = {}
    for name in spec["daily"]["tables"]:
        daily[name] = {part: [[text(v) for v in r] for r in run(f"daily-{part}:{name}")] for part in ("view", "table")}
    print(f"{engine}: the daily views and rollup tables read in {time.monotonic() - begin:.1f}s", flush=True)
    print(f"{engine}: the view's plan:\n{plan()}", flush=True)
    print(json.dumps({"engine": engine, "view": times["view"], "plain": times["plain"],
                      "rows": [[str(v) for v in r] for r in rows], "resolved": resolved, "daily": daily}), flush=True)


def text(v):
    return "" if v is None else str(v)


if __name__ == "__main__":
    main()

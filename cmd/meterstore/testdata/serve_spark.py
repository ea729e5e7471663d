"""Reads an archived table through the Iceberg REST catalog of a running
meterstore serve with Spark 4.1 and Iceberg 1.12's Spark runtime, as a
user configuring the catalog with docs/foreign-engines.md's settings would.

Called by cmd/meterstore's TestServeSpark with a JSON file naming the
server, the catalog and its settings (a token of scope catalog), the
statement reading W, the warehouse directory, a token of scope query, the
table, the snapshot ids MeterStore's
`snapshots` command lists and an earlier snapshot with the watermark in
force at it. One Spark session (local[1], no UI) runs every check:

  - the catalog lists the namespace and the table;
  - counts and sums per day equal POST /v1/query over readings_versions,
    and the monthly total per meter, resolved in Spark SQL by the merge key
    rule (highest version, then latest recorded_at, per malo_id, obis_code
    and from), equals readings;
  - every metadata table loads, is non-empty and agrees with the data and
    with MeterStore's snapshots;
  - the current snapshot's summary holds MeterStore's watermark W;
  - the readings view <table>_readings the catalog serves is listed, holds
    the rows of MeterStore's readings below W (the table holds marked
    versions and unmarked late corrections) and W among its properties;
  - VERSION AS OF the earlier snapshot counts what MeterStore held cold then;
  - catalogs without a credential or with a wrong secret are refused;
  - in a session whose catalog is named otherwise than server.catalog_name
    the view cannot be read, and where a catalog is named as the namespace
    a two-part name is catalog.table;
  - ALTER TABLE is refused as the catalog offers no commit, DROP TABLE
    ... PURGE, INSERT, DELETE, UPDATE and rewrite_manifests fail (each
    line "refused:" says how many files it left), DROP VIEW and CREATE OR
    REPLACE VIEW are refused, and the table and the view are as they were.

Exit status 0 means every check passed. The lines "spark: <seconds>" tell
how long the session took to start and to run the checks.
"""

import datetime
import decimal
import json
import os
import sys
import time
import urllib.request

from pyspark.sql import SparkSession


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok:", what, flush=True)


def meterstore(spec, sql):
    """The rows of sql on the table, by POST /v1/query as JSON lines."""
    req = urllib.request.Request(
        spec["base"] + "/v1/query", data=json.dumps({"table": spec["table"], "sql": sql}).encode(),
        headers={"Authorization": "Bearer " + spec["query_token"], "Content-Type": "application/json",
                 "Accept": "application/x-ndjson"})
    with urllib.request.urlopen(req, timeout=60) as resp:
        lines = resp.read().decode().splitlines()
    return [json.loads(line, parse_float=decimal.Decimal) for line in lines]


def same(got, want, who):
    """got and want map a key to (count, sum) or to a sum."""
    check(sorted(got) == sorted(want), f"{who}: the keys {sorted(got)} are MeterStore's {sorted(want)}")
    for key, w in want.items():
        g = got[key]
        if isinstance(w, tuple):
            ok = g[0] == w[0] and abs(decimal.Decimal(str(g[1])) - decimal.Decimal(str(w[1]))) < decimal.Decimal("1e-6")
        else:
            ok = abs(decimal.Decimal(str(g)) - decimal.Decimal(str(w))) < decimal.Decimal("1e-6")
        check(ok, f"{who}: {key}: Spark {g}, MeterStore {w}")


def instant(s):
    """The instant of an RFC 3339 time, None for anything else."""
    try:
        return datetime.datetime.fromisoformat(s.replace("Z", "+00:00"))
    except (AttributeError, ValueError):
        return None


def local_builder(jar, app, master):
    """A session builder of Spark on master, bound to 127.0.0.1, without a
    UI, in UTC, with Iceberg's runtime jar and SQL extensions."""
    return (
        SparkSession.builder.master(master)
        .appName(app)
        .config("spark.jars", jar)
        .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
    )


def renamed(spec, name, drop=()):
    """The settings spec["conf"] for a catalog called name, without the
    keys whose suffix is in drop."""
    prefix = "spark.sql.catalog." + spec["catalog"]
    return {"spark.sql.catalog." + name + k[len(prefix):]: v
            for k, v in spec["conf"].items() if k[len(prefix):] not in drop}


def session(spec, jar):
    """A session with the catalog of the settings spec["conf"] (those of
    docs/foreign-engines.md) and the same catalog under other names: bad,
    with a wrong secret, and anon, without a credential. Spark initializes
    a catalog when it is first used."""
    b = local_builder(jar, "meterstore-rest-catalog", "local[1]").config("spark.sql.shuffle.partitions", "1")
    conf = dict(spec["conf"])
    conf.update(renamed(spec, "anon", drop=(".credential", ".scope", ".rest.auth.type", ".oauth2-server-uri")))
    for k, v in renamed(spec, "bad").items():
        conf[k] = v.split(":")[0] + ":wrong" if k.endswith(".credential") else v
    for k, v in conf.items():
        b = b.config(k, v)
    return b.getOrCreate()


def warehouse_files(spec):
    """The number of files in the warehouse."""
    return sum(len(fs) for _, _, fs in os.walk(spec["warehouse"]))


def attempt(spark, sql):
    """The error of sql, or None."""
    try:
        spark.sql(sql).collect()
    except Exception as err:  # py4j or pyspark's analysis errors
        return str(err)
    return None


def refused(spark, sql):
    """The error of sql, which must fail."""
    try:
        spark.sql(sql).collect()
    except Exception as err:  # py4j or pyspark's analysis errors
        return str(err)
    raise AssertionError(f"not refused: {sql}")


def reason(err):
    """The first line of a Java exception's message in err, or its first line."""
    for line in err.splitlines():
        if "Exception:" in line:
            return line.strip()
    return err.splitlines()[0]


def main():
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    jar = sys.argv[2]
    ns, name = spec["namespace"], spec["table"]
    cat = spec["catalog"]
    t = f"{cat}.{ns}.{name}"

    start = time.monotonic()
    spark = session(spec, jar)
    spark.sparkContext.setLogLevel("ERROR")
    print(f"spark: session started in {time.monotonic() - start:.1f}s", flush=True)
    start = time.monotonic()

    # Refusals first: a catalog without a valid credential learns nothing.
    err = refused(spark, f"SHOW NAMESPACES IN bad")
    check("invalid_client" in err or "NotAuthorized" in err or "401" in err,
          f"a wrong secret is refused: {reason(err)}")
    err = refused(spark, f"SHOW NAMESPACES IN anon")
    check("NotAuthorized" in err or "401" in err or "bearer" in err.lower(),
          f"no credential is refused: {reason(err)}")

    nss = [r[0] for r in spark.sql(f"SHOW NAMESPACES IN {cat}").collect()]
    check(ns in nss, f"Spark lists namespace {ns}: {nss}")
    tables = [r.tableName for r in spark.sql(f"SHOW TABLES IN {cat}.{ns}").collect()]
    check(name in tables, f"Spark lists {ns}.{name}: {tables}")

    # Every version, per day.
    want = {r["day"]: (int(r["n"]), r["s"]) for r in meterstore(spec, (
        "SELECT strftime(\"from\" AT TIME ZONE 'UTC', '%Y-%m-%d') AS day, count(*) AS n, sum(value) AS s "
        "FROM readings_versions GROUP BY 1 ORDER BY 1"))}
    check(len(want) == spec["days"], f"MeterStore answers {len(want)} days")
    got = {r[0]: (r[1], r[2]) for r in spark.sql(
        f"SELECT date_format(`from`, 'yyyy-MM-dd'), count(*), sum(value) FROM {t} GROUP BY 1").collect()}
    same(got, want, "per day")
    total = sum(n for n, _ in want.values())

    # Resolved: the merge key's winner, per meter and month.
    want = {(r["malo_id"], r["month"]): r["s"] for r in meterstore(spec, (
        f"SELECT malo_id, strftime(\"from\" AT TIME ZONE 'UTC', '%Y-%m') AS month, sum(value) AS s "
        f"FROM readings WHERE \"from\" < TIMESTAMPTZ '{spec['watermark']}' GROUP BY 1, 2"))}
    got = {(r[0], r[1]): r[2] for r in spark.sql(f"""
        SELECT malo_id, date_format(`from`, 'yyyy-MM'), sum(value) FROM (
            SELECT *, row_number() OVER (PARTITION BY malo_id, obis_code, `from`
                                         ORDER BY version DESC, recorded_at DESC) AS rank
            FROM {t}) WHERE rank = 1 GROUP BY 1, 2""").collect()}
    same(got, want, "resolved monthly total")
    resolved = spark.sql(f"SELECT count(DISTINCT malo_id, obis_code, `from`) FROM {t}").collect()[0][0]
    check(resolved < total, f"the table holds superseded versions: {total} rows, {resolved} merge keys")

    # The metadata tables.
    snaps = spark.sql(f"SELECT snapshot_id, parent_id FROM {t}.snapshots ORDER BY committed_at").collect()
    check(sorted(r[0] for r in snaps) == sorted(spec["snapshots"]),
          f"snapshots: {len(snaps)}, as MeterStore lists them ({len(spec['snapshots'])})")
    current = snaps[-1][0]
    history = spark.sql(f"SELECT snapshot_id, is_current_ancestor FROM {t}.history").collect()
    check(sorted(r[0] for r in history) == sorted(spec["snapshots"]) and all(r[1] for r in history),
          f"history: {len(history)} entries, every snapshot an ancestor of the current one")
    refs = {r[0]: (r[1], r[2]) for r in spark.sql(f"SELECT name, type, snapshot_id FROM {t}.refs").collect()}
    check(refs.get("main") == ("BRANCH", current), f"refs: main is the current snapshot {current}: {refs}")
    files = spark.sql(f"SELECT count(*), sum(record_count) FROM {t}.files").collect()[0]
    check(files[0] > 0 and files[1] == total, f"files: {files[0]} files of {files[1]} rows")
    parts = spark.sql(f"SELECT count(*), sum(record_count), sum(file_count) FROM {t}.partitions").collect()[0]
    check(parts[0] > 0 and parts[1] == total and parts[2] == files[0],
          f"partitions: {parts[0]} partitions of {parts[1]} rows in {parts[2]} files")
    manifests = spark.sql(f"""SELECT count(*), sum(added_data_files_count + existing_data_files_count)
        FROM {t}.manifests""").collect()[0]
    check(manifests[0] > 0 and manifests[1] == files[0], f"manifests: {manifests[0]}, listing {manifests[1]} live files")
    entries = spark.sql(f"""SELECT count(*), sum(data_file.record_count) FROM {t}.entries
        WHERE status <> 2 AND data_file.content = 0""").collect()[0]
    check(entries[0] == files[0] and entries[1] == total, f"entries: {entries[0]} live data files of {entries[1]} rows")
    log = spark.sql(f"SELECT latest_snapshot_id FROM {t}.metadata_log_entries ORDER BY timestamp").collect()
    check(len(log) > 0 and log[-1][0] == current, f"metadata_log_entries: {len(log)}, the last at snapshot {current}")

    # The watermark of the data Spark reads: the summary of the current
    # snapshot (main) holds it, as MeterStore's snapshots command says.
    # The statement of docs/foreign-engines.md.
    w = spark.sql(spec["watermark_sql"]).collect()[0][0]
    check(w is not None and instant(w) == instant(spec["watermark"]),
          f"the current snapshot's summary holds the watermark {w}; MeterStore's is {spec['watermark']}")

    # The readings view the catalog serves: MeterStore's readings below W,
    # row for row, resolved in Spark by the view's SQL. The table holds
    # marked rows and unmarked late corrections, so that the view must
    # use both the marks and the rule.
    view = f"{name}_readings"
    v = f"{cat}.{ns}.{view}"
    views = [r[1] for r in spark.sql(f"SHOW VIEWS IN {cat}.{ns}").collect()]
    check(view in views, f"Spark lists view {ns}.{view}: {views}")
    marks = {r[0]: r[1] for r in spark.sql(
        f"SELECT CAST(superseded AS STRING), count(*) FROM {t} GROUP BY 1").collect()}
    check(marks.get(None) == spec["late_rows"] and marks.get("true", 0) > 0 and marks.get("false", 0) > 0,
          f"the table's marks: {marks} (None: late corrections, unmarked)")
    want_rows = sorted((r["malo_id"], r["f"], r["v"], decimal.Decimal(r["x"])) for r in meterstore(spec, (
        "SELECT malo_id, strftime(\"from\" AT TIME ZONE 'UTC', '%Y-%m-%dT%H:%M:%S') AS f, "
        "CAST(version AS VARCHAR) AS v, CAST(value AS VARCHAR) AS x "
        f"FROM readings WHERE \"from\" < TIMESTAMPTZ '{spec['watermark']}'")))
    got_rows = sorted((r[0], r[1], r[2], r[3]) for r in spark.sql(
        f"SELECT malo_id, date_format(`from`, \"yyyy-MM-dd'T'HH:mm:ss\"), CAST(version AS STRING), value FROM {v}").collect())
    check(len(got_rows) == len(want_rows) < total, f"{v}: {len(got_rows)} rows; MeterStore's readings below W: {len(want_rows)}")
    check(got_rows == want_rows, f"{v}: every row (meter, from, version, value) is MeterStore's")
    got = {(r[0], r[1]): r[2] for r in spark.sql(
        f"SELECT malo_id, date_format(`from`, 'yyyy-MM'), sum(value) FROM {v} GROUP BY 1, 2").collect()}
    same(got, want, f"{v}: resolved monthly total")
    vprops = {r[0]: r[1] for r in spark.sql(f"SHOW TBLPROPERTIES {v}").collect()}
    check(instant(vprops.get("meterstore.watermark", "")) == instant(spec["watermark"]),
          f"{v}: its property meterstore.watermark is W: {vprops.get('meterstore.watermark')}")

    # The views name the table in the catalog server.catalog_name names: in
    # a session without a catalog of that name (one with the same settings
    # under the names cat and the namespace's), Spark reads that name as a
    # namespace of its session catalog; and a catalog named as the
    # namespace takes a two-part name for catalog.table.
    other = spark.newSession()
    for k in spec["conf"]:
        other.conf.unset(k)
    for alias in ("cat", ns):
        for key, value in renamed(spec, alias).items():
            other.conf.set(key, value)
    err = refused(other, f"SELECT count(*) FROM cat.{ns}.{view}")
    print("pitfall:", f"cat.{ns}.{view} without a catalog {cat} |", reason(err), flush=True)
    check("REQUIRES_SINGLE_PART_NAMESPACE" in err, f"cat.{ns}.{view} in a session without a catalog {cat}: {reason(err)}")
    err = refused(other, f"SELECT count(*) FROM {ns}.{name}")
    print("pitfall:", f"{ns}.{name} with a catalog {ns} |", reason(err), flush=True)
    check("TABLE_OR_VIEW_NOT_FOUND" in err, f"{ns}.{name} in a session with a catalog named {ns}: {reason(err)}")

    # Time travel to the earlier snapshot: what MeterStore held cold then.
    early = spec["early"]
    n = meterstore(spec, f"SELECT count(*) AS n FROM readings_versions WHERE \"from\" < TIMESTAMPTZ '{early['watermark']}'")[0]["n"]
    got = spark.sql(f"SELECT count(*) FROM {t} VERSION AS OF {early['snapshot']}").collect()[0][0]
    check(0 < got == n < total, f"VERSION AS OF {early['snapshot']}: {got} rows; MeterStore below {early['watermark']}: {n}")

    # Writes are refused, and change nothing. A commit is refused by the
    # client, as GET /v1/config advertises no commit endpoint (the server
    # would answer 405 "read-only catalog"); DROP ... PURGE is refused by
    # Spark for gc.enabled=false. An INSERT writes its data files, then its
    # commit is refused the same way. Iceberg cleans up after a
    # CleanableFailure (a 403 from the server, say) but not after the
    # client's own UnsupportedOperationException, so the files of a refused
    # INSERT (its data files, manifest and manifest list) stay in the
    # table's directories, unreferenced: orphans for the orphan cleanup.
    no_commit = "Server does not support endpoint: POST /v1/{prefix}/namespaces/{namespace}/tables/{table}"
    first = f"'{spec['first_malo']}' AND `from` < TIMESTAMP '2026-03-02 00:00:00'"
    for sql, want in ((f"ALTER TABLE {t} SET TBLPROPERTIES ('spark.probe' = 'x')", no_commit),
                      (f"DROP TABLE {t} PURGE", "GC is disabled"),
                      (f"INSERT INTO {t} SELECT * FROM {t} LIMIT 1", no_commit),
                      (f"DELETE FROM {t} WHERE malo_id = {first}", None),
                      (f"UPDATE {t} SET value = value + 1 WHERE malo_id = {first}", None),
                      (f"CALL {cat}.system.rewrite_manifests('{ns}.{name}')", None)):
        was = warehouse_files(spec)
        err = attempt(spark, sql)
        what = " ".join(sql.split(" ")[:2])
        print("refused:", what, f"({warehouse_files(spec) - was} new files)", "|", reason(err) if err else "not refused", flush=True)
        check(err is not None and (want is None or want in err), f"{what} is refused: {reason(err) if err else None}")
    # The view is read-only: its writes are not advertised either.
    for sql, endpoint in ((f"DROP VIEW {v}", "DELETE /v1/{prefix}/namespaces/{namespace}/views/{view}"),
                          (f"CREATE OR REPLACE VIEW {v} AS SELECT 1 AS x", "/v1/{prefix}/namespaces/{namespace}/views")):
        err = refused(spark, sql)
        print("refused:", " ".join(sql.split(" ")[:2]), "|", reason(err), flush=True)
        check("Server does not support endpoint" in err and endpoint in err,
              f"{' '.join(sql.split(' ')[:2])} is refused: {reason(err) or err}")
    check(spark.sql(f"SELECT count(*) FROM {v}").collect()[0][0] == len(want_rows), f"{v} is as it was")
    after = spark.sql(f"SELECT count(*) FROM {t}").collect()[0][0]
    snaps = spark.sql(f"SELECT count(*) FROM {t}.snapshots").collect()[0][0]
    props = {r[0]: r[1] for r in spark.sql(f"SHOW TBLPROPERTIES {t}").collect()}
    check(after == total and snaps == len(spec["snapshots"]) and "spark.probe" not in props,
          f"after the writes: {after} rows, {snaps} snapshots, no new property")

    print(f"spark: checks ran in {time.monotonic() - start:.1f}s", flush=True)
    spark.stop()


if __name__ == "__main__":
    main()

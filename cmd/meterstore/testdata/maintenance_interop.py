"""Reads a table that MeterStore aged (archivals, late corrections, expiry,
compaction, schema evolution) as engines without a catalog do: PyIceberg's
StaticTable and DuckDB's iceberg_scan on the table directory, which
metadata/version-hint.text points at the current metadata.

Called by cmd/meterstore's TestMaintenanceInterop with a JSON file naming
the table directory, MeterStore's readings_versions and readings (each a
list of rows), the columns the table must have and the watermark. Each
engine must hold exactly MeterStore's versions, row for row, and the rows
it keeps after resolving (superseded marks, then the highest version per
interval) must be MeterStore's readings. Exit status 0 means every check
passed.
"""

import collections
import datetime
import decimal
import json
import os
import sys


def check(cond, what):
    if not cond:
        raise AssertionError(what)
    print("ok:", what)


def norm(row, extra):
    """A row as comparable text: the values as decimals, the time in UTC."""
    frm = row["from"]
    if isinstance(frm, datetime.datetime):
        frm = frm.astimezone(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    out = (row["malo_id"], row["obis_code"], frm, str(decimal.Decimal(str(row["version"]))),
           str(decimal.Decimal(str(row["value"])).normalize()))
    return out + tuple(None if row.get(c) is None else str(row[c]) for c in extra)


def compare(got, want, who):
    g, w = collections.Counter(got), collections.Counter(want)
    missing, extra = w - g, g - w
    check(not missing and not extra,
          f"{who}: {len(got)} rows, MeterStore {len(want)}; missing {list(missing)[:3]}, extra {list(extra)[:3]}")


def resolve(rows):
    """The readings of rows: superseded versions dropped, then per interval
    the highest version (a late correction is not marked)."""
    best = {}
    for r in rows:
        if r.get("superseded") is True:
            continue
        k = (r["malo_id"], r["obis_code"], r["from"])
        if k not in best or decimal.Decimal(str(r["version"])) > decimal.Decimal(str(best[k]["version"])):
            best[k] = r
    return list(best.values())


def marks_hold(rows):
    """Every version marked superseded has a higher version of its interval."""
    top = {}
    for r in rows:
        k = (r["malo_id"], r["obis_code"], r["from"])
        top[k] = max(top.get(k, decimal.Decimal(-1)), decimal.Decimal(str(r["version"])))
    return all(r.get("superseded") is not True or decimal.Decimal(str(r["version"])) < top[(r["malo_id"], r["obis_code"], r["from"])]
               for r in rows)


def main():
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    extra = spec.get("extra", [])
    want_versions = [norm(r, extra) for r in spec["versions"]]
    want_readings = [norm(r, extra) for r in spec["readings"]]

    from pyiceberg.table import StaticTable

    tbl = StaticTable.from_metadata(spec["table_dir"])
    names = [f.name for f in tbl.schema().fields]
    for c in spec.get("columns", []):
        check(c in names, f"PyIceberg: the schema has {c}: {names}")
    for c in spec.get("absent", []):
        check(c not in names, f"PyIceberg: the schema lacks {c}: {names}")
    summary = tbl.current_snapshot().summary.additional_properties
    got_w = summary.get("meterstore.watermark")
    check(got_w is not None and datetime.datetime.fromisoformat(got_w) == datetime.datetime.fromisoformat(spec["watermark"]),
          f"PyIceberg: the current snapshot's watermark {summary.get('meterstore.watermark')} is {spec['watermark']}")
    print("info: PyIceberg sees", len(tbl.snapshots()), "snapshots;",
          len(tbl.inspect.files()), "data files;", len(tbl.inspect.manifests()), "manifests")
    rows = tbl.scan().to_arrow().to_pylist()
    compare([norm(r, extra) for r in rows], want_versions, "PyIceberg, every version")
    check(marks_hold(rows), "PyIceberg: every version marked superseded has a higher one")
    compare([norm(r, extra) for r in resolve(rows)], want_readings, "PyIceberg, resolved")
    if spec.get("decided"):
        # After a compaction re-marked the late corrections, the marks
        # alone resolve: the rows not superseded are the readings.
        compare([norm(r, extra) for r in rows if r.get("superseded") is False], want_readings,
                "PyIceberg, the rows marked not superseded")

    import duckdb
    import duckdb_ext

    ext_dir = os.path.join(list(duckdb_ext.__path__)[0], "extensions")
    con = duckdb.connect(config={"extension_directory": ext_dir, "autoinstall_known_extensions": "false",
                                 "allow_community_extensions": "false"})
    for ext in ("avro", "iceberg"):
        con.execute(f"LOAD {ext}")
    con.execute("SET TimeZone = 'UTC'")
    # Times as text: DuckDB's Python client needs pytz for TIMESTAMPTZ.
    sel = ", ".join(['malo_id', 'obis_code', """strftime("from", '%Y-%m-%dT%H:%M:%S') AS "from\"""",
                     'version', 'value', 'superseded'] + [f'"{c}"' for c in extra])
    cur = con.execute(f"SELECT {sel} FROM iceberg_scan(?)", [spec["table_dir"]])
    cols = [d[0] for d in cur.description]
    rows = [dict(zip(cols, r)) for r in cur.fetchall()]
    compare([norm(r, extra) for r in rows], want_versions, "DuckDB, every version")
    compare([norm(r, extra) for r in resolve(rows)], want_readings, "DuckDB, resolved")
    if spec.get("decided"):
        compare([norm(r, extra) for r in rows if r.get("superseded") is False], want_readings,
                "DuckDB, the rows marked not superseded")


if __name__ == "__main__":
    main()

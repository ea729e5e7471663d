"""Reads tables that MeterStore wrote with PyIceberg, a foreign engine.

Called by catalog's TestInteropPyIceberg with the path of a JSON file that
says where the table is and what it must contain. It opens the table twice,
through StaticTable on the table directory (version-hint.text) and through
MeterStore's read-only REST catalog, and checks each. Exit status 0 means
every check passed.
"""

import json
import sys

from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.table import StaticTable


def check(tbl, want, how):
    md = tbl.metadata
    assert md.format_version == 2, f"{how}: format version {md.format_version}"
    fields = [[f.field_id, f.name, str(f.field_type), f.required] for f in tbl.schema().fields]
    assert fields == want["fields"], f"{how}: schema {fields} != {want['fields']}"
    spec = [[f.source_id, str(f.transform), f.name] for f in tbl.spec().fields]
    assert spec == want["spec"], f"{how}: partition spec {spec} != {want['spec']}"
    summary = tbl.current_snapshot().summary
    got = summary.additional_properties.get(want["summary_key"])
    assert got == want["summary_value"], f"{how}: summary {want['summary_key']} = {got!r}"
    rows = tbl.scan().to_arrow()
    writers = sorted(rows.column("writer").to_pylist())
    assert writers == sorted(want["writers"]), f"{how}: {len(writers)} rows, want {len(want['writers'])}"
    values = sorted(rows.column("value").to_pylist())
    assert values == sorted(want["values"]), f"{how}: values differ"
    print(f"{how}: ok, {len(writers)} rows")


def main():
    with open(sys.argv[1]) as f:
        want = json.load(f)
    check(StaticTable.from_metadata(want["table_dir"]), want, "StaticTable")
    cat = RestCatalog("meterstore", uri=want["rest_uri"])
    assert [list(ns) for ns in cat.list_namespaces()] == [["metering"]], cat.list_namespaces()
    assert [list(t) for t in cat.list_tables("metering")] == [["metering", "power"]]
    check(cat.load_table("metering.power"), want, "RestCatalog")


if __name__ == "__main__":
    main()

"""Reads an evolved MeterStore table with PyIceberg, a foreign engine.

Called by store's TestEvolveInteropPyIceberg with the path of a JSON file
naming the table's metadata file, the columns its current schema must and
must not have, and the values of one column, null as None. Exit status 0
means every check passed.
"""

import json
import sys

from pyiceberg.table import StaticTable


def main():
    with open(sys.argv[1]) as f:
        want = json.load(f)
    tbl = StaticTable.from_metadata(want["metadata"])
    names = [f.name for f in tbl.schema().fields]
    for name in want["has"]:
        assert name in names, f"column {name} missing from {names}"
        assert not tbl.schema().find_field(name).required, f"column {name} is required"
    for name in want["lacks"]:
        assert name not in names, f"column {name} still in {names}"
    rows = tbl.scan().to_arrow()
    for name in want["lacks"]:
        assert name not in rows.column_names, f"column {name} still scanned"
    col = want["column"]
    got = sorted(rows.column(col).to_pylist(), key=lambda v: (v is not None, v or ""))
    exp = sorted(want["values"], key=lambda v: (v is not None, v or ""))
    assert got == exp, f"{col}: {got} != {exp}"
    print(f"ok: {len(got)} rows, columns {names}")


if __name__ == "__main__":
    main()

"""Drives MeterStore's writable REST catalog with PyIceberg's commits that
it must refuse, and checks that each refusal reaches the client as a
refusal, never as CommitStateUnknownException, which PyIceberg (and
Iceberg's Java client) raise for a 5xx on a commit: a client then cannot
tell a refusal from a lost answer.

Called by TestInteropPyIcebergRefusals with the catalog's URI and the
warehouse root. Exit status 0 means every check passed.
"""

import sys

from pyiceberg.catalog.rest import RestCatalog
from pyiceberg.exceptions import BadRequestError, CommitFailedException, CommitStateUnknownException
from pyiceberg.table.update import AssertCurrentSchemaId, SetLocationUpdate


def refused(what, want, fn):
    try:
        fn()
    except CommitStateUnknownException as e:
        raise AssertionError(f"{what}: CommitStateUnknownException, a refusal taken for a lost answer: {e}")
    except want as e:
        print(f"{what}: {type(e).__name__}: {e}")
        return
    except Exception as e:
        raise AssertionError(f"{what}: {type(e).__name__}, want {want.__name__}: {e}")
    raise AssertionError(f"{what}: accepted")


def main():
    uri, root = sys.argv[1], sys.argv[2]
    cat = RestCatalog("meterstore", uri=uri)
    tbl = cat.load_table("metering.power")
    before = tbl.metadata_location

    def commit(*updates, requirements=()):
        return lambda: cat.commit_table(tbl, requirements, updates)

    refused("a location outside the warehouse", BadRequestError,
            commit(SetLocationUpdate(location="file:///elsewhere/power")))
    refused("a location on another store", BadRequestError,
            commit(SetLocationUpdate(location="s3://bucket/power")))
    refused("a location that climbs out of the warehouse", BadRequestError,
            commit(SetLocationUpdate(location=root + "/metering/../../escape")))
    refused("a requirement that fails", CommitFailedException,
            commit(requirements=(AssertCurrentSchemaId(current_schema_id=42),)))
    refused("a purge", NotImplementedError, lambda: cat.purge_table("metering.power"))

    after = cat.load_table("metering.power")
    assert after.metadata_location == before, f"the table moved: {before} -> {after.metadata_location}"
    assert after.location() == tbl.location(), f"the location changed: {after.location()}"
    print("unchanged:", after.metadata_location)


if __name__ == "__main__":
    main()

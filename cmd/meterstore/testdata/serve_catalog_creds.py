"""Reads an archived table on an S3 warehouse through the Iceberg REST
catalog of a running meterstore serve that vends its S3 key pair, with
PyIceberg's RestCatalog and no S3 credentials of its own.

Called by cmd/meterstore's TestServeCatalogVend with a JSON file naming
the server, the catalog's URI, a token of scopes catalog and storage
("notebooks", as docs/serving.md names it), one of scope catalog alone
("lake"), one of scope query, the table and the vended secret. The caller runs it without any AWS
credentials in its environment. The trusted client must scan MeterStore's
rows (counts and sums per day equal those of POST /v1/query); the lake
client, and the trusted client that does not ask for vended credentials,
must fail to read the files for want of credentials. Exit status 0 means
every check passed.
"""

import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from serve_catalog import arrow_days, check, meterstore_days, request, same  # noqa: E402


def catalog(spec, client, **props):
    from pyiceberg.catalog import load_catalog

    return load_catalog(client, type="rest", uri=spec["catalog_uri"],
                        credential=client + ":" + spec["tokens"][client], **props)


def no_aws_credentials():
    leaked = sorted(k for k in os.environ if k.startswith("AWS_") and k not in (
        "AWS_EC2_METADATA_DISABLED", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE", "AWS_CA_BUNDLE"))
    check(not leaked, f"no AWS credentials in the environment: {leaked}")


def scan_fails(tbl, who):
    """The scan of tbl must fail, and for want of credentials."""
    try:
        data = tbl.scan().to_arrow()
    except Exception as err:  # pyarrow raises OSError; wrapped or not
        msg = f"{type(err).__name__}: {err}"
        check(any(s in msg for s in ("ACCESS_DENIED", "AccessDenied", "403", "credentials", "Forbidden",
                                     "InvalidAccessKeyId", "SignatureDoesNotMatch")),
              f"{who}: the scan fails for want of credentials: {msg[:300]}")
        return
    check(False, f"{who}: the scan was refused (it read {data.num_rows} rows)")


def main():
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    no_aws_credentials()
    secret, ns, name = spec["vended_secret"], spec["namespace"], spec["table"]
    want = meterstore_days(spec)
    check(len(want) == spec["days"] and all(n == spec["rows_a_day"] for n, _ in want.values()),
          f"MeterStore answers {want}")

    # /v1/config gives the settings, never the keys, even to the trusted
    # token that asks.
    status, body = request(spec["catalog_uri"] + "/v1/config", token=spec["tokens"]["notebooks"])
    check(status == 200 and body["defaults"].get("s3.endpoint") == spec["s3_endpoint"],
          f"/v1/config has the endpoint: {body['defaults']}")
    check(secret not in json.dumps(body), "/v1/config holds no secret")

    # PyIceberg asks for vended credentials by default; the trusted token
    # gets them and reads MeterStore's rows.
    trusted = catalog(spec, "notebooks")
    tbl = trusted.load_table(f"{ns}.{name}")
    check(tbl.io.properties.get("s3.secret-access-key") == secret, "the trusted client got the vended key pair")
    check(tbl.io.properties.get("s3.endpoint") == spec["s3_endpoint"], "the trusted client got the endpoint")
    data = tbl.scan().to_arrow()
    check(data.num_rows == spec["days"] * spec["rows_a_day"], f"the trusted client scans {data.num_rows} rows")
    same(arrow_days(data), want, "PyIceberg with vended credentials")

    # The token of scope catalog alone loads the table with the settings
    # and no key, and cannot read its files.
    lake = catalog(spec, "lake")
    tbl = lake.load_table(f"{ns}.{name}")
    check("s3.secret-access-key" not in tbl.io.properties and "s3.access-key-id" not in tbl.io.properties,
          "the catalog-only client got no key")
    check(tbl.io.properties.get("s3.endpoint") == spec["s3_endpoint"], "the catalog-only client got the endpoint")
    scan_fails(tbl, "the catalog-only client")

    # The trusted token whose client does not ask gets no key either.
    unasked = catalog(spec, "notebooks", **{"header.X-Iceberg-Access-Delegation": "remote-signing"})
    tbl = unasked.load_table(f"{ns}.{name}")
    check("s3.secret-access-key" not in tbl.io.properties, "the trusted client that does not ask got no key")
    scan_fails(tbl, "the trusted client that does not ask")


if __name__ == "__main__":
    main()

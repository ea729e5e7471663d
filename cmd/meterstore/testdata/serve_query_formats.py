"""Asks a running meterstore serve the same queries in its three answer
formats, as a foreign client would: urllib for HTTP, pyarrow for the
Arrow IPC stream.

Called by cmd/meterstore's TestServe with the server's base URL and a
bearer token of scope query. Checks that CSV, JSON lines and Arrow agree
(count and sum of power's readings; a generated result of many Arrow
batches), that the Arrow schema's metadata has the watermark and tiers of
the headers, and that SQL DuckDB cannot bind is a 400 naming the problem;
and that GET /v1/tables/power/series/... (the typed read, no SQL engine)
answers one series' readings as the query of readings does, in the three
formats, with its headers, and refuses a missing range and a bad check
digit.
Exit status 0 means every check passed.
"""

import csv
import datetime
import decimal
import io
import json
import sys
import urllib.error
import urllib.parse
import urllib.request

import pyarrow
import pyarrow.ipc

ARROW = "application/vnd.apache.arrow.stream"


def post(base, token, sql, accept):
    """The status, headers and body of POST /v1/query of sql over power."""
    body = json.dumps({"table": "power", "sql": sql}).encode()
    req = urllib.request.Request(base + "/v1/query", data=body)
    req.add_header("Authorization", "Bearer " + token)
    req.add_header("Content-Type", "application/json")
    req.add_header("Accept", accept)
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, resp.headers, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.headers, err.read()


def as_csv(base, token, sql):
    status, headers, body = post(base, token, sql, "text/csv")
    assert status == 200 and headers["Content-Type"].startswith("text/csv"), f"CSV: {status} {body[:200]!r}"
    rows = list(csv.reader(io.StringIO(body.decode())))
    return headers, rows[0], rows[1:]


def as_jsonl(base, token, sql):
    status, headers, body = post(base, token, sql, "application/x-ndjson")
    assert status == 200 and headers["Content-Type"] == "application/x-ndjson", f"JSON lines: {status} {body[:200]!r}"
    return headers, [json.loads(line) for line in body.decode().splitlines()]


def as_arrow(base, token, sql):
    status, headers, body = post(base, token, sql, ARROW)
    assert status == 200 and headers["Content-Type"] == ARROW, f"Arrow: {status} {body[:200]!r}"
    reader = pyarrow.ipc.open_stream(body)
    table = reader.read_all()
    return headers, table, reader.stats.num_record_batches


def check_metadata(headers, table):
    """The schema's metadata says what the headers say."""
    md = table.schema.metadata or {}
    for key, header in (("watermark", "X-MeterStore-Watermark"), ("tiers", "X-MeterStore-Tiers")):
        got = md.get(b"meterstore." + key.encode())
        assert got is not None, f"Arrow: no meterstore.{key} in the schema metadata {md}"
        assert got.decode() == (headers[header] or ""), f"Arrow: meterstore.{key} {got!r}, header {headers[header]!r}"


def readings(base, token):
    """count and sum of power's readings agree in the three formats and
    with the aggregate DuckDB computes; value is DECIMAL, so it is
    decimal128 in Arrow and exact text elsewhere."""
    sql = 'SELECT malo_id, "from", value FROM readings ORDER BY "from"'
    _, header, rows = as_csv(base, token, "SELECT count(*) AS n, sum(value) AS s FROM readings")
    n, s = int(rows[0][0]), decimal.Decimal(rows[0][1] or "0")

    _, header, rows = as_csv(base, token, sql)
    assert header == ["malo_id", "from", "value"], f"CSV header {header}"
    csv_values = [decimal.Decimal(r[2]) for r in rows]

    _, lines = as_jsonl(base, token, sql)
    json_values = [decimal.Decimal(line["value"]) for line in lines]

    headers, table, _ = as_arrow(base, token, sql)
    check_metadata(headers, table)
    value = table.schema.field("value").type
    assert pyarrow.types.is_decimal(value), f"Arrow: value is {value}"
    assert pyarrow.types.is_timestamp(table.schema.field("from").type), f"Arrow: from is {table.schema.field('from').type}"
    arrow_values = table.column("value").to_pylist()

    for name, values in (("CSV", csv_values), ("JSON lines", json_values), ("Arrow", arrow_values)):
        assert (len(values), sum(values, decimal.Decimal(0))) == (n, s), f"{name}: {len(values)} readings, sum {sum(values)}; want {n}, {s}"
    arrow_froms = [t.strftime("%Y-%m-%dT%H:%M:%SZ") for t in table.column("from").to_pylist()]
    json_froms = [line["from"] for line in lines]
    assert arrow_froms == json_froms == [r[1] for r in rows], "the formats disagree on from"
    return n


def generated(base, token):
    """A result of 50,000 rows, several Arrow batches: the same count and
    sum in every format."""
    sql = "SELECT range AS i, range * 0.5 AS half FROM range(50000)"
    want_n, want_sum = 50000, 50000 * 49999 // 2
    _, _, rows = as_csv(base, token, sql)
    _, lines = as_jsonl(base, token, sql)
    headers, table, batches = as_arrow(base, token, sql)
    check_metadata(headers, table)
    assert pyarrow.types.is_int64(table.schema.field("i").type), f"Arrow: i is {table.schema.field('i').type}"
    assert batches >= 2, f"Arrow: {batches} record batches"
    for name, values in (
        ("CSV", [int(r[0]) for r in rows]),
        ("JSON lines", [line["i"] for line in lines]),
        ("Arrow", table.column("i").to_pylist()),
    ):
        assert (len(values), sum(values)) == (want_n, want_sum), f"{name}: {len(values)} rows, sum {sum(values)}"
    halves = sum(table.column("half").to_pylist(), decimal.Decimal(0))
    assert halves == decimal.Decimal(want_sum) / 2, f"Arrow: sum of half {halves}"


def invalid(base, token):
    """An unknown column and a syntax error: 400, code invalid_query."""
    for sql, names in (("SELECT nonexistent FROM readings", "nonexistent"), ("SELECT FROM WHERE (", "syntax error")):
        for accept in ("text/csv", ARROW):
            status, headers, body = post(base, token, sql, accept)
            err = json.loads(body)
            assert status == 400 and err["code"] == "invalid_query" and names in err["error"], f"{sql}: {status} {err}"


def get(base, token, path, accept):
    """The status, headers and body of GET path."""
    req = urllib.request.Request(base + path)
    req.add_header("Authorization", "Bearer " + token)
    req.add_header("Accept", accept)
    try:
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.status, resp.headers, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, err.headers, err.read()


def series(base, token):
    """The typed read of the first series over its first day answers, in
    CSV, JSON lines and Arrow, the rows and headers of the query of
    readings over the same range; a missing range is 400, a market
    location whose check digit fails 422."""
    _, _, rows = as_csv(base, token, 'SELECT malo_id, obis_code, min("from") FROM readings GROUP BY ALL ORDER BY 1, 2 LIMIT 1')
    if not rows:
        return 0
    malo, obis, first = rows[0]
    start = first[:10] + "T00:00:00Z"
    day = decimal.Decimal(0)
    end = (datetime.datetime.fromisoformat(start.replace("Z", "+00:00")) + datetime.timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    path = f"/v1/tables/power/series/{malo}/{urllib.parse.quote(obis)}?from={start}&to={end}"
    sql = (f"SELECT * FROM readings WHERE malo_id = '{malo}' AND obis_code = '{obis}' "
           f"AND \"from\" >= TIMESTAMPTZ '{start}' AND \"from\" < TIMESTAMPTZ '{end}' ORDER BY \"from\"")
    qheaders, qheader, qrows = as_csv(base, token, sql)
    status, headers, body = get(base, token, path, "text/csv")
    assert status == 200, f"series CSV: {status} {body[:300]!r}"
    got = list(csv.reader(io.StringIO(body.decode())))
    assert got[0] == qheader and got[1:] == qrows, f"series CSV differs from the query:\n{got[:3]}\n{[qheader] + qrows[:2]}"
    for h in ("X-MeterStore-Watermark", "X-MeterStore-Tiers", "X-MeterStore-Mode"):
        assert headers[h] == qheaders[h], f"series {h}: {headers[h]!r}, query {qheaders[h]!r}"
    status, _, body = get(base, token, path, "application/x-ndjson")
    lines = [json.loads(line) for line in body.decode().splitlines()]
    assert status == 200 and [line["from"] for line in lines] == [r[4] for r in qrows], f"series JSON lines: {status} {lines[:2]}"
    status, headers, body = get(base, token, path, ARROW)
    assert status == 200, f"series Arrow: {status} {body[:300]!r}"
    table = pyarrow.ipc.open_stream(body).read_all()
    check_metadata(headers, table)
    assert pyarrow.types.is_decimal(table.schema.field("value").type), f"series Arrow: value is {table.schema.field('value').type}"
    day = sum(table.column("value").to_pylist(), decimal.Decimal(0))
    assert table.num_rows == len(qrows) and day == sum((decimal.Decimal(r[6]) for r in qrows), decimal.Decimal(0)), \
        f"series Arrow: {table.num_rows} rows, sum {day}"
    status, _, body = get(base, token, f"/v1/tables/power/series/{malo}/{urllib.parse.quote(obis)}", "text/csv")
    assert status == 400 and json.loads(body)["code"] == "bad_request", f"series without a range: {status} {body!r}"
    bad = malo[:-1] + str((int(malo[-1]) + 1) % 10)
    status, _, body = get(base, token, f"/v1/tables/power/series/{bad}/{urllib.parse.quote(obis)}?from={start}&to={end}", "text/csv")
    assert status == 422 and json.loads(body)["code"] == "invalid_input", f"series of a bad check digit: {status} {body!r}"
    return len(qrows)


def main():
    base, token = sys.argv[1], sys.argv[2]
    n = readings(base, token)
    generated(base, token)
    invalid(base, token)
    k = series(base, token)
    print(f"serve query formats: ok ({n} readings, {k} by the typed series read)")


if __name__ == "__main__":
    main()

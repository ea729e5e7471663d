"""Calls a running meterstore serve as a foreign client would, with urllib.

Called by cmd/meterstore's TestServe with the server's base URL, a
bearer token of scope query and one of scope ingest restricted to table
power, whose partitions for today exist. Exit status 0 means every check
passed.
"""

import datetime
import json
import sys
import urllib.error
import urllib.request


def call(base, path, token=None, data=None, content_type=None):
    status, headers, body = call_headers(base, path, token, data, content_type)
    return status, headers.get("Content-Type"), body


def call_headers(base, path, token=None, data=None, content_type=None, headers=None):
    """Like call, with request headers added and the response's returned."""
    req = urllib.request.Request(base + path, data=data)
    if token is not None:
        req.add_header("Authorization", "Bearer " + token)
    if content_type is not None:
        req.add_header("Content-Type", content_type)
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, resp.headers, json.load(resp)
    except urllib.error.HTTPError as err:
        return err.code, err.headers, json.load(err)


def delivery(n):
    """n quarter hours of one market location from midnight UTC today, as CSV."""
    day = datetime.datetime.now(datetime.timezone.utc).replace(hour=0, minute=0, second=0, microsecond=0)
    lines = ["sparte,malo_id,obis_code,from,to,value,unit,quality,resolution,version,version_scope"]
    for i in range(n):
        start = day + datetime.timedelta(minutes=15 * i)
        end = start + datetime.timedelta(minutes=15)
        lines.append(",".join([
            "STROM", "20000000008", "1-1:1.29.0",
            start.strftime("%Y-%m-%dT%H:%M:%SZ"), end.strftime("%Y-%m-%dT%H:%M:%SZ"),
            f"{i}.125", "kWh", "220", "PT15M", "1", "9900000000003:" + day.strftime("%Y-%m"),
        ]))
    return ("\n".join(lines) + "\n").encode()


def ingest(base, ingest_token):
    body = delivery(4)
    path = "/v1/tables/power/readings"
    status, ctype, resp = call(base, path, ingest_token, body, "text/csv")
    assert ctype == "application/json", f"ingest: Content-Type {ctype}"
    want = {"inserted": 4, "present": 0, "late": 0, "batches": 1, "superseded": 0, "shadowed": 0, "refused": 0}
    assert (status, resp) == (200, want), f"ingest: {status} {resp}"

    status, _, resp = call(base, path, ingest_token, body, "text/csv")
    want = {"inserted": 0, "present": 4, "late": 0, "batches": 1, "superseded": 0, "shadowed": 0, "refused": 0}
    assert (status, resp) == (200, want), f"the same delivery again: {status} {resp}"

    # An idempotent retry is answered with the recorded outcome; the key
    # sent with another body is refused.
    key = {"Idempotency-Key": "interop-" + datetime.datetime.now().isoformat()}
    first = call_headers(base, path, ingest_token, body, "text/csv", key)
    assert first[0] == 200 and first[1].get("Idempotent-Replayed") is None, f"keyed delivery: {first[0]} {first[2]}"
    again = call_headers(base, path, ingest_token, body, "text/csv", key)
    assert (again[0], again[2]) == (first[0], first[2]) and again[1].get("Idempotent-Replayed") == "true", \
        f"keyed retry: {again[0]} {dict(again[1])} {again[2]}"
    other = call_headers(base, path, ingest_token, delivery(3), "text/csv", key)
    assert other[0] == 422 and other[2]["code"] == "idempotency_key_reused", f"key reused: {other[0]} {other[2]}"

    status, _, resp = call(base, "/v1/tables/gas/readings", ingest_token, body, "text/csv")
    assert status == 403 and resp["code"] == "forbidden", f"ingest to a table not the token's: {status} {resp}"

    status, _, resp = call(base, path, ingest_token, body, "application/json")
    assert status == 415 and resp["code"] == "unsupported_media_type", f"ingest as application/json: {status} {resp}"


def main():
    base, token, ingest_token = sys.argv[1], sys.argv[2], sys.argv[3]

    status, ctype, body = call(base, "/healthz")
    assert (status, body) == (200, {"status": "ok"}), f"healthz: {status} {body}"
    assert ctype == "application/json", f"healthz: Content-Type {ctype}"

    status, _, body = call(base, "/v1/status")
    assert status == 401 and body["code"] == "unauthorized", f"status without a token: {status} {body}"

    status, _, body = call(base, "/v1/status", token + "x")
    assert status == 401 and body["code"] == "unauthorized", f"status with a wrong token: {status} {body}"

    status, _, body = call(base, "/v1/status", token)
    assert status == 200, f"status: {status} {body}"
    names = sorted(t["table"] for t in body["tables"])
    assert names == ["gas", "power"], f"status tables: {names}"
    for t in body["tables"]:
        for key in ("watermark", "hot_partitions", "partitions_ahead", "invariant_violations", "healthy"):
            assert key in t, f"status of {t['table']} lacks {key}: {t}"

    status, _, body = call(base, "/v2/nothing", token)
    assert status == 404 and body["code"] == "not_found", f"unknown route: {status} {body}"

    ingest(base, ingest_token)
    print("serve interop: ok")


def check_metrics(base, admin_token):
    """GET /metrics: 401 without a token, and with scope admin the
    Prometheus text exposition, holding meterstore's metrics."""
    status, _, body = call(base, "/metrics")
    assert status == 401 and body["code"] == "unauthorized", f"metrics without a token: {status} {body}"
    req = urllib.request.Request(base + "/metrics")
    req.add_header("Authorization", "Bearer " + admin_token)
    with urllib.request.urlopen(req, timeout=30) as resp:
        status, ctype, text = resp.status, resp.headers.get("Content-Type"), resp.read().decode()
    assert status == 200 and ctype.startswith("text/plain"), f"metrics: {status} {ctype}"
    lines = [l for l in text.splitlines() if l.startswith("meterstore_http_requests_total{")]
    assert any('route="/v1/status"' in l for l in lines), f"metrics: no request counted for /v1/status: {lines}"
    assert "meterstore_http_auth_failures_total{" in text, "metrics: no auth failure counted"
    print("serve metrics: ok")


def check_query(base, token):
    """POST /v1/query as CSV: count(*) of power's readings is the 4 the
    ingest step posted."""
    body = json.dumps({"table": "power", "sql": "SELECT count(*) AS n FROM readings"}).encode()
    req = urllib.request.Request(base + "/v1/query", data=body)
    req.add_header("Authorization", "Bearer " + token)
    req.add_header("Content-Type", "application/json")
    req.add_header("Accept", "text/csv")
    with urllib.request.urlopen(req, timeout=30) as resp:
        status, ctype, text = resp.status, resp.headers.get("Content-Type"), resp.read().decode()
        tiers = resp.headers.get("X-MeterStore-Tiers")
    assert status == 200 and ctype.startswith("text/csv"), f"query: {status} {ctype}"
    assert text.splitlines() == ["n", "4"], f"query: {text!r}"
    assert tiers, "query: no X-MeterStore-Tiers"
    print("serve query: ok")


if __name__ == "__main__":
    main()
    check_metrics(sys.argv[1], sys.argv[4])
    check_query(sys.argv[1], sys.argv[2])

"""Calls a running meterstore serve as a foreign client would, with urllib.

Called by cmd/meterstore's TestServe with the server's base URL and a
bearer token of scope query. Exit status 0 means every check passed.
"""

import json
import sys
import urllib.error
import urllib.request


def call(base, path, token=None):
    req = urllib.request.Request(base + path)
    if token is not None:
        req.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(req, timeout=30) as resp:
            return resp.status, resp.headers.get("Content-Type"), json.load(resp)
    except urllib.error.HTTPError as err:
        return err.code, err.headers.get("Content-Type"), json.load(err)


def main():
    base, token = sys.argv[1], sys.argv[2]

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
    print("serve interop: ok")


if __name__ == "__main__":
    main()


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


if __name__ == "__main__" and len(sys.argv) > 3:
    check_metrics(sys.argv[1], sys.argv[3])

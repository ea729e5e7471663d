"""Runs a statement with parameters through psycopg 3 against serve's
PostgreSQL protocol, once as psycopg sends it by default (Parse, Bind,
Describe of the portal, Execute) and once prepared on the server (a named
statement, described): prints each row's columns tab-separated, then the
rows again of the prepared run.

usage: serve_pg_psycopg.py host port user password from to malo_id
"""
import datetime
import sys

import psycopg

host, port, user, password, frm, to, malo = sys.argv[1:8]
SQL = """SELECT malo_id, "from", value, version FROM power.readings
WHERE "from" >= %s AND "from" < %s AND malo_id = %s ORDER BY "from" """
args = (datetime.datetime.fromisoformat(frm), datetime.datetime.fromisoformat(to), malo)


def show(v):
    if isinstance(v, datetime.datetime):
        return v.astimezone(datetime.timezone.utc).isoformat()
    return str(v)


with psycopg.connect(host=host, port=port, user=user, password=password, dbname="meterstore", sslmode="disable") as conn:
    for prepare in (False, True):
        with conn.cursor() as cur:
            cur.execute(SQL, args, prepare=prepare)
            print("RUN prepare=%s" % prepare)
            for row in cur.fetchall():
                print("\t".join(show(v) for v in row))

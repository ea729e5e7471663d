"""psycopg 3: connect, a parameterised query over power.readings, fetch.

The connection comes from libpq's PG* environment variables."""
import datetime
import os

import psycopg

start = datetime.datetime.fromisoformat(os.environ.get("MS_PG_FROM", "2026-03-02T00:00:00+00:00"))
malo = os.environ.get("MS_PG_MALO", "20000000008")
with psycopg.connect() as conn:
    print("server_version", conn.info.server_version >= 100000)
    with conn.cursor() as cur:
        cur.execute(
            'SELECT malo_id, "from", value FROM power.readings WHERE "from" >= %s AND malo_id = %s ORDER BY "from"',
            (start, malo),
        )
        print("columns", [(d.name, d.type_code) for d in cur.description])
        n = 0
        for row in cur.fetchall():
            n += 1
            if n <= 3:
                print("row", row[0], row[1].astimezone(datetime.timezone.utc).isoformat(), row[2])
        print("rows", n)

"""SQLAlchemy's PostgreSQL inspector and pandas.read_sql over psycopg 3.

The connection comes from libpq's PG* environment variables."""
import os

import pandas
import sqlalchemy
from sqlalchemy.engine import URL

url = URL.create(
    "postgresql+psycopg",
    username=os.environ.get("PGUSER"),
    password=os.environ.get("PGPASSWORD"),
    host=os.environ.get("PGHOST", "127.0.0.1"),
    port=int(os.environ.get("PGPORT", "5432")),
    database=os.environ.get("PGDATABASE"),
    query={"sslmode": os.environ["PGSSLMODE"]} if os.environ.get("PGSSLMODE") else {},
)
engine = sqlalchemy.create_engine(url)
insp = sqlalchemy.inspect(engine)
print("schemas", sorted(insp.get_schema_names()))
print("tables", sorted(insp.get_table_names(schema="power")))
for c in insp.get_columns("readings", schema="power"):
    print("column", c["name"], c["type"], c["nullable"])
with engine.connect() as conn:
    df = pandas.read_sql(
        sqlalchemy.text('SELECT malo_id, "from", value FROM power.readings WHERE "from" >= :start AND malo_id = :malo ORDER BY "from"'),
        conn,
        params={"start": os.environ.get("MS_PG_FROM", "2026-03-02T00:00:00+00:00"), "malo": os.environ.get("MS_PG_MALO", "20000000008")},
    )
print("frame", list(df.columns), len(df))
print(df.head(3).to_string(index=False))

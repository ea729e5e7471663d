"""Plays Spark with a Hadoop catalog on a MeterStore warehouse.

Called by catalog's TestInteropSparkHadoop with the warehouse directory and
the path of the iceberg-spark-runtime jar. One Spark session serves the
whole test, so that the JVM starts once: it takes a command per line on
standard input and answers each with one JSON line on standard output.

  insert   appends one row (writer "spark-0") to hadoop.metering.power
           and answers its snapshot id and the table's row count
  read     answers the writers the table holds, as the hint shows it

The session ends when standard input does.
"""

import json
import sys

from pyspark.sql import SparkSession


def main():
    warehouse, jar = sys.argv[1], sys.argv[2]
    spark = (
        SparkSession.builder.master("local[1]")
        .appName("meterstore-hadoop-fork")
        .config("spark.jars", jar)
        .config("spark.sql.extensions", "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions")
        .config("spark.sql.catalog.hadoop", "org.apache.iceberg.spark.SparkCatalog")
        .config("spark.sql.catalog.hadoop.type", "hadoop")
        .config("spark.sql.catalog.hadoop.warehouse", "file://" + warehouse)
        # Each command must see the files as they are now.
        .config("spark.sql.catalog.hadoop.cache-enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.enabled", "false")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.sql.shuffle.partitions", "1")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        cmd = line.strip()
        if cmd == "insert":
            spark.sql(
                "INSERT INTO hadoop.metering.power VALUES "
                "('51238696780', TIMESTAMP '2026-02-01 00:00:00', 2.5, 'spark-0')"
            )
            snap = spark.sql(
                "SELECT snapshot_id FROM hadoop.metering.power.snapshots ORDER BY committed_at DESC LIMIT 1"
            ).collect()[0][0]
            n = spark.sql("SELECT count(*) FROM hadoop.metering.power").collect()[0][0]
            print(json.dumps({"snapshot": snap, "rows": n}), flush=True)
        elif cmd == "read":
            rows = spark.sql("SELECT writer FROM hadoop.metering.power").collect()
            print(json.dumps({"writers": sorted(r[0] for r in rows)}), flush=True)
        else:
            print(json.dumps({"error": f"unknown command {cmd!r}"}), flush=True)
    spark.stop()


if __name__ == "__main__":
    main()

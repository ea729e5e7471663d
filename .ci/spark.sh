#!/usr/bin/env bash
# Spark 4.1 with Iceberg 1.12's Spark runtime, for the Spark interop tests:
# pyspark from PyPI, the runtime jar into Maven's local repository, where
# the tests look for it (or set MS_SPARK_ICEBERG_JAR). pyspark 4.2 and later
# have no matching Iceberg runtime yet: keep the pins together.
set -euo pipefail
python3 -m pip install -q --disable-pip-version-check 'pyspark==4.1.4'
mvn -q -B dependency:get -Dartifact=org.apache.iceberg:iceberg-spark-runtime-4.1_2.13:1.12.0 -Dtransitive=false

package resolve_test

import (
	"testing"

	"github.com/meterstore/meterstore/internal/resolve"
)

// TestSQLText pins the statements each consumer emits for a sample table:
// the readings views' (Spark, Trino, DuckDB), which foreign engines run,
// and the query engine's. A change of text is a change foreign engines
// see, to be checked with them (TestServeTrino, TestServeSpark).
func TestSQLText(t *testing.T) {
	cols := []string{"malo_id", "from", "value", "version", "recorded_at"}
	key := []string{"malo_id", "from"}
	for _, c := range []struct {
		d        resolve.Dialect
		relation string
		marked   bool
		want     string
	}{
		{resolve.Spark, resolve.Spark.Table("", "metering", "power"), false, "SELECT `malo_id`, `from`, `value`, `version`, `recorded_at` FROM (SELECT r.`malo_id`, r.`from`, r.`value`, r.`version`, r.`recorded_at`, row_number() OVER (PARTITION BY r.`malo_id`, r.`from` ORDER BY r.`version` DESC, r.`recorded_at` DESC) AS `_meterstore_rank` FROM `metering`.`power` r) ranked WHERE `_meterstore_rank` = 1"},
		{resolve.Spark, resolve.Spark.Table("", "metering", "power"), true, "SELECT r.`malo_id`, r.`from`, r.`value`, r.`version`, r.`recorded_at` FROM `metering`.`power` r LEFT JOIN (SELECT `from`, collect_set(named_struct('k0', `malo_id`)) AS `_meterstore_keys` FROM `metering`.`power` WHERE `superseded` IS NULL GROUP BY `from`) o ON o.`from` = r.`from` WHERE r.`superseded` = false AND (o.`_meterstore_keys` IS NULL OR NOT array_contains(o.`_meterstore_keys`, named_struct('k0', r.`malo_id`))) UNION ALL SELECT `malo_id`, `from`, `value`, `version`, `recorded_at` FROM (SELECT r.`malo_id`, r.`from`, r.`value`, r.`version`, r.`recorded_at`, row_number() OVER (PARTITION BY r.`malo_id`, r.`from` ORDER BY r.`version` DESC, r.`recorded_at` DESC) AS `_meterstore_rank` FROM `metering`.`power` r WHERE (r.`superseded` IS NULL OR r.`superseded` = false) AND EXISTS (SELECT 1 FROM `metering`.`power` o WHERE o.`superseded` IS NULL AND o.`malo_id` = r.`malo_id` AND o.`from` = r.`from`)) ranked WHERE `_meterstore_rank` = 1"},
		{resolve.Trino, resolve.Trino.Table("", "metering", "power"), false, `SELECT "malo_id", "from", "value", "version", "recorded_at" FROM (SELECT r."malo_id", r."from", r."value", r."version", r."recorded_at", row_number() OVER (PARTITION BY r."malo_id", r."from" ORDER BY r."version" DESC, r."recorded_at" DESC) AS "_meterstore_rank" FROM "metering"."power" r) ranked WHERE "_meterstore_rank" = 1`},
		{resolve.Trino, resolve.Trino.Table("", "metering", "power"), true, `SELECT r."malo_id", r."from", r."value", r."version", r."recorded_at" FROM "metering"."power" r LEFT JOIN (SELECT "from", array_agg(ROW("malo_id")) AS "_meterstore_keys" FROM "metering"."power" WHERE "superseded" IS NULL GROUP BY "from") o ON o."from" = r."from" WHERE r."superseded" = false AND (o."_meterstore_keys" IS NULL OR NOT contains(o."_meterstore_keys", ROW(r."malo_id"))) UNION ALL SELECT "malo_id", "from", "value", "version", "recorded_at" FROM (SELECT r."malo_id", r."from", r."value", r."version", r."recorded_at", row_number() OVER (PARTITION BY r."malo_id", r."from" ORDER BY r."version" DESC, r."recorded_at" DESC) AS "_meterstore_rank" FROM "metering"."power" r WHERE (r."superseded" IS NULL OR r."superseded" = false) AND EXISTS (SELECT 1 FROM "metering"."power" o WHERE o."superseded" IS NULL AND o."malo_id" = r."malo_id" AND o."from" = r."from")) ranked WHERE "_meterstore_rank" = 1`},
		{resolve.DuckDB, resolve.DuckDB.Table("", "metering", "power"), false, `SELECT "malo_id", "from", "value", "version", "recorded_at" FROM (SELECT r."malo_id", r."from", r."value", r."version", r."recorded_at", row_number() OVER (PARTITION BY r."malo_id", r."from" ORDER BY r."version" DESC, r."recorded_at" DESC) AS "_meterstore_rank" FROM "metering"."power" r) ranked WHERE "_meterstore_rank" = 1`},
		{resolve.DuckDB, resolve.DuckDB.Table("", "metering", "power"), true, `SELECT r."malo_id", r."from", r."value", r."version", r."recorded_at" FROM "metering"."power" r ANTI JOIN (SELECT "malo_id", "from" FROM "metering"."power" WHERE "superseded" IS NULL) o ON o."malo_id" = r."malo_id" AND o."from" = r."from" WHERE r."superseded" = false UNION ALL SELECT "malo_id", "from", "value", "version", "recorded_at" FROM (SELECT r."malo_id", r."from", r."value", r."version", r."recorded_at", row_number() OVER (PARTITION BY r."malo_id", r."from" ORDER BY r."version" DESC, r."recorded_at" DESC) AS "_meterstore_rank" FROM "metering"."power" r SEMI JOIN (SELECT "malo_id", "from" FROM "metering"."power" WHERE "superseded" IS NULL) o ON o."malo_id" = r."malo_id" AND o."from" = r."from" WHERE r."superseded" IS NULL OR r."superseded" = false) ranked WHERE "_meterstore_rank" = 1`},
		{resolve.Engine, "power", false, `SELECT * FROM power QUALIFY row_number() OVER (PARTITION BY "malo_id", "from" ORDER BY "version" DESC, "recorded_at" DESC) = 1`},
		{resolve.Engine, "power", true, `SELECT * FROM power r ANTI JOIN (SELECT "malo_id", "from" FROM power WHERE "superseded" IS NULL) o ON o."malo_id" = r."malo_id" AND o."from" = r."from" WHERE r."superseded" = false UNION ALL SELECT * FROM (SELECT * FROM power r SEMI JOIN (SELECT "malo_id", "from" FROM power WHERE "superseded" IS NULL) o ON o."malo_id" = r."malo_id" AND o."from" = r."from" WHERE r."superseded" IS NULL OR r."superseded" = false) QUALIFY row_number() OVER (PARTITION BY "malo_id", "from" ORDER BY "version" DESC, "recorded_at" DESC) = 1`},
	} {
		if got := resolve.SQL(c.d, c.relation, cols, key, c.marked); got != c.want {
			t.Errorf("%s marked=%v:\n got %s\nwant %s", c.d.Name, c.marked, got, c.want)
		}
	}
}

// TestIdent quotes an identifier holding its dialect's quote.
func TestIdent(t *testing.T) {
	if got, want := resolve.Spark.Ident("a`b"), "`a``b`"; got != want {
		t.Errorf("Spark.Ident = %s, want %s", got, want)
	}
	if got, want := resolve.Trino.Ident(`a"b`), `"a""b"`; got != want {
		t.Errorf("Trino.Ident = %s, want %s", got, want)
	}
}

// TestTable names the catalog in the dialects that resolve three-part
// names, never in DuckDB's, and only when there is one.
func TestTable(t *testing.T) {
	for _, c := range []struct {
		d             resolve.Dialect
		catalog, want string
	}{
		{resolve.Spark, "meterstore", "`meterstore`.`metering`.`power`"},
		{resolve.Trino, "meterstore", `"meterstore"."metering"."power"`},
		{resolve.DuckDB, "meterstore", `"metering"."power"`},
		{resolve.Spark, "", "`metering`.`power`"},
		{resolve.Trino, "", `"metering"."power"`},
	} {
		if got := c.d.Table(c.catalog, "metering", "power"); got != c.want {
			t.Errorf("%s.Table(%q, metering, power) = %s, want %s", c.d.Name, c.catalog, got, c.want)
		}
	}
}

// pgjdbc: DatabaseMetaData and a PreparedStatement over power.readings.
// Run: java -cp "$MS_PGJDBC_JAR" Jdbc.java; the connection comes from
// libpq's PG* environment variables.
import java.sql.*;
import java.time.OffsetDateTime;
import java.util.Properties;

public class Jdbc {
    static String env(String k, String d) {
        String v = System.getenv(k);
        return v == null || v.isEmpty() ? d : v;
    }

    public static void main(String[] args) throws Exception {
        String url = "jdbc:postgresql://" + env("PGHOST", "127.0.0.1") + ":" + env("PGPORT", "5432") + "/" + env("PGDATABASE", "");
        Properties p = new Properties();
        p.setProperty("user", env("PGUSER", ""));
        p.setProperty("password", env("PGPASSWORD", ""));
        p.setProperty("sslmode", env("PGSSLMODE", "prefer"));
        try (Connection c = DriverManager.getConnection(url, p)) {
            DatabaseMetaData md = c.getMetaData();
            try (ResultSet rs = md.getSchemas()) {
                while (rs.next()) System.out.println("schema " + rs.getString("TABLE_SCHEM"));
            }
            try (ResultSet rs = md.getTables(null, "power", "%", null)) {
                while (rs.next()) System.out.println("table " + rs.getString("TABLE_SCHEM") + "." + rs.getString("TABLE_NAME") + " " + rs.getString("TABLE_TYPE"));
            }
            try (ResultSet rs = md.getColumns(null, "power", "readings", null)) {
                while (rs.next()) System.out.println("column " + rs.getString("COLUMN_NAME") + " " + rs.getString("TYPE_NAME") + " " + rs.getInt("DATA_TYPE") + " " + rs.getInt("ORDINAL_POSITION"));
            }
            try (PreparedStatement ps = c.prepareStatement("SELECT malo_id, \"from\", value FROM power.readings WHERE \"from\" >= ? AND malo_id = ? ORDER BY \"from\"")) {
                ps.setObject(1, OffsetDateTime.parse(env("MS_PG_FROM", "2026-03-02T00:00:00Z")));
                ps.setString(2, env("MS_PG_MALO", "20000000008"));
                try (ResultSet rs = ps.executeQuery()) {
                    ResultSetMetaData m = rs.getMetaData();
                    for (int i = 1; i <= m.getColumnCount(); i++) System.out.println("result column " + m.getColumnName(i) + " " + m.getColumnTypeName(i));
                    int n = 0;
                    while (rs.next()) {
                        if (++n <= 3) System.out.println("row " + rs.getString(1) + " " + rs.getObject(2, OffsetDateTime.class).toInstant() + " " + rs.getBigDecimal(3));
                    }
                    System.out.println("rows " + n);
                }
            }
        }
    }
}

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.time.OffsetDateTime;
import java.util.Properties;

/**
 * Runs a statement with parameters through pgjdbc against serve's
 * PostgreSQL protocol, three times (the third as a server-prepared
 * statement: prepareThreshold=2), and prints each run's rows, their
 * columns tab-separated.
 *
 * usage: java -cp postgresql.jar ServePgJdbc.java url user password from to malo_id
 */
public class ServePgJdbc {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.setProperty("user", args[1]);
        p.setProperty("password", args[2]);
        p.setProperty("prepareThreshold", "2");
        try (Connection c = DriverManager.getConnection(args[0], p)) {
            String sql = "SELECT malo_id, \"from\", value, version FROM power.readings "
                + "WHERE \"from\" >= ? AND \"from\" < ? AND malo_id = ? ORDER BY \"from\"";
            try (PreparedStatement st = c.prepareStatement(sql)) {
                for (int run = 0; run < 3; run++) {
                    st.setObject(1, OffsetDateTime.parse(args[3]));
                    st.setObject(2, OffsetDateTime.parse(args[4]));
                    st.setString(3, args[5]);
                    System.out.println("RUN " + run);
                    try (ResultSet rs = st.executeQuery()) {
                        while (rs.next()) {
                            System.out.println(rs.getString(1) + "\t"
                                + rs.getObject(2, OffsetDateTime.class).toInstant() + "\t"
                                + rs.getBigDecimal(3).toPlainString() + "\t"
                                + rs.getBigDecimal(4).toPlainString());
                        }
                    }
                }
            }
        }
    }
}

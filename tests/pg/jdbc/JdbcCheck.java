// Run by tests/pg/test_jdbc.py with the org.postgresql:postgresql driver from Maven Central:
//   java -cp postgresql-42.7.4.jar JdbcCheck.java <port> <database>
// Prints one line per check ("name=value"); the Python test compares them exactly.
import java.sql.*;
import java.time.*;

public class JdbcCheck {
    public static void main(String[] args) throws Exception {
        String url = "jdbc:postgresql://127.0.0.1:" + args[0] + "/" + args[1];
        try (Connection c = DriverManager.getConnection(url, "jdbc", "")) {
            DatabaseMetaData md = c.getMetaData();
            System.out.println("product=" + md.getDatabaseProductName());
            try (Statement s = c.createStatement()) {
                int n = s.executeUpdate("INSERT INTO jd (time, host, v) VALUES ('2024-01-01T00:00:00Z', 'a', 1.25), ('2024-01-01T00:01:00Z', 'b', 2.5)");
                System.out.println("inserted=" + n);
            }
            // prepareThreshold=5 by default: run enough times to switch to a named server-side statement.
            try (PreparedStatement ps = c.prepareStatement("SELECT time, host, v FROM jd WHERE time >= ? AND host = ? ORDER BY time")) {
                for (int i = 0; i < 7; i++) {
                    ps.setTimestamp(1, Timestamp.valueOf(LocalDateTime.of(2024, 1, 1, 0, 0)));
                    ps.setString(2, "b");
                    try (ResultSet rs = ps.executeQuery()) {
                        ResultSetMetaData m = rs.getMetaData();
                        while (rs.next()) {
                            if (i == 6) {
                                System.out.println("types=" + m.getColumnTypeName(1) + "," + m.getColumnTypeName(2) + "," + m.getColumnTypeName(3));
                                System.out.println("row=" + rs.getTimestamp(1).toLocalDateTime() + "," + rs.getString(2) + "," + rs.getDouble(3));
                            }
                        }
                    }
                }
            }
            try (PreparedStatement ps = c.prepareStatement("SELECT count(*), sum(v) FROM jd WHERE v > ?")) {
                ps.setDouble(1, 1.0);
                try (ResultSet rs = ps.executeQuery()) {
                    rs.next();
                    System.out.println("agg=" + rs.getLong(1) + "," + rs.getDouble(2));
                }
            }
            try (Statement s = c.createStatement()) {
                s.executeQuery("SELECT * FROM no_such_table");
            } catch (SQLException e) {
                System.out.println("error=" + e.getSQLState());
            }
            // executeBatch: many Bind/Execute pairs before one Sync
            try (PreparedStatement ps = c.prepareStatement("INSERT INTO jd (time, host, v) VALUES (?, ?, ?)")) {
                for (int i = 0; i < 100; i++) {
                    ps.setTimestamp(1, Timestamp.valueOf(LocalDateTime.of(2024, 1, 2, 0, 0).plusSeconds(i)));
                    ps.setString(2, "batch");
                    ps.setDouble(3, i * 0.5);
                    ps.addBatch();
                }
                int total = 0;
                for (int n : ps.executeBatch()) total += n;
                System.out.println("batch=" + total);
            }
            // A fetch size inside a transaction makes the driver read through a portal, 7 rows at a time.
            c.setAutoCommit(false);
            try (Statement s = c.createStatement()) {
                s.setFetchSize(7);
                try (ResultSet rs = s.executeQuery("SELECT v FROM jd WHERE host = 'batch' ORDER BY time")) {
                    double sum = 0;
                    int n = 0;
                    while (rs.next()) {
                        sum += rs.getDouble(1);
                        n++;
                    }
                    System.out.println("fetched=" + n + "," + sum);
                }
            }
            c.commit();
            c.setAutoCommit(true);
            try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery("SELECT current_database(), version()")) {
                rs.next();
                System.out.println("db=" + rs.getString(1));
            }
        }
    }
}

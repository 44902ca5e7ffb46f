"""JDBC: the org.postgresql:postgresql driver from Maven Central runs tests/pg/jdbc/JdbcCheck.java."""

import os
import subprocess
from pathlib import Path

PGJDBC_VERSION = "42.7.4"
HERE = Path(__file__).resolve().parent


def pgjdbc_jar() -> Path:
    jar = Path.home() / f".m2/repository/org/postgresql/postgresql/{PGJDBC_VERSION}/postgresql-{PGJDBC_VERSION}.jar"
    if not jar.exists():
        subprocess.run(["mvn", "-q", "dependency:get", f"-Dartifact=org.postgresql:postgresql:{PGJDBC_VERSION}"], check=True, timeout=600)
    return jar


def test_jdbc_driver_prepared_statements_types_and_errors(pg_server):
    db = pg_server.new_db("jdbc")
    r = subprocess.run(
        ["java", "-cp", str(pgjdbc_jar()), str(HERE / "jdbc" / "JdbcCheck.java"), str(pg_server.pg_port), db],
        capture_output=True, text=True, timeout=300, env=dict(os.environ),
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        "product=PostgreSQL",
        "inserted=2",
        "types=timestamp,text,float8",
        "row=2024-01-01T00:01,b,2.5",
        "agg=2,3.75",
        "error=42P01",
        "batch=100",
        "fetched=100,2475.0",
        f"db={db}",
    ]

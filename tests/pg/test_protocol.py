"""Bad input and connection life: malformed and oversized messages, wrong parameter counts and types,
cancellation, disconnects, start-up refusals. Every case gets an ErrorResponse (or at worst closes only its
own connection) and the server keeps serving."""

import socket
import struct
import subprocess
import threading
import time

import psycopg
import pytest

from conftest import RawConn, error_fields, message, startup_packet

SLOW = "SELECT count(*) FROM generate_series(1, 1000000000000)"


def errors(msgs):
    return [error_fields(b) for t, b in msgs if t == b"E"]


def still_serving(pg_server, db):
    with psycopg.connect(pg_server.dsn(db), autocommit=True) as c:
        assert c.execute("SELECT count(*) FROM cpu").fetchone() == (4,)


def test_unknown_message_type_gets_error_and_closes_only_that_connection(pg_server, db, raw):
    c = raw()
    c.send(message(b"Z", b""))
    msgs = c.read_until(b"Z")
    assert errors(msgs)[0]["C"] == "08P01"
    assert c.recv_msg() is None  # closed
    still_serving(pg_server, db)


def test_malformed_bodies_get_protocol_errors(pg_server, db, raw):
    for bad in (
        message(b"B", b"\0\0\0\0\x03\xe8"),  # Bind claiming 1000 parameters, no bytes
        message(b"P", b"s\0SELECT 1"),  # Parse without its terminators
        message(b"D", b"X"),  # Describe of an unknown kind
    ):
        c = raw()
        c.send(bad + message(b"S", b""))
        msgs = c.read_until(b"Z")
        errs = errors(msgs)
        assert errs and errs[0]["C"] == "08P01", (bad, msgs)
    still_serving(pg_server, db)


def test_oversized_message_is_refused_before_its_body(pg_server, db, raw):
    c = raw()
    c.send(b"Q" + struct.pack("!i", 0x7FFF_FFF0) + b"SELECT 1")
    msgs = c.read_until(b"Z")  # the answer comes at once, without waiting for 2 GiB
    e = errors(msgs)[0]
    assert e["C"] == "54000" and "MESSAGE_BYTES_MAX" in e["M"], e
    still_serving(pg_server, db)


def test_oversized_query_is_skipped_and_the_connection_goes_on(pg_server, db, raw):
    c = raw()
    big = b"SELECT '" + b"x" * (64 * 1024 * 1024) + b"'\0"  # one byte over MESSAGE_BYTES_MAX with its header
    c.send(message(b"Q", big))
    msgs = c.read_until(b"Z")
    assert [t for t, _ in msgs] == [b"E", b"Z"] and errors(msgs)[0]["C"] == "54000", msgs
    msgs = c.query("SELECT 42")
    assert [t for t, _ in msgs] == [b"T", b"D", b"C", b"Z"], msgs


def test_wrong_parameter_counts_and_types(pg_server, db, raw):
    c = raw()
    # Parse a statement with two parameters, bind one: 08P01, then everything up to Sync is skipped.
    c.send(message(b"P", b"s1\0SELECT usage FROM cpu WHERE host = $1 AND time >= $2\0\0\0")
           + message(b"B", b"\0s1\0\0\0\0\x01\0\0\0\x01a\0\0")
           + message(b"E", b"\0\0\0\0\0")
           + message(b"S", b""))
    msgs = c.read_until(b"Z")
    assert [t for t, _ in msgs] == [b"1", b"E", b"Z"], msgs
    assert "requires 2" in errors(msgs)[0]["M"]
    # The statement survives; bind it right but with a parameter that is not a timestamp.
    c.send(message(b"B", b"\0s1\0\0\0\0\x02\0\0\0\x01a\0\0\0\x05never\0\0")
           + message(b"E", b"\0\0\0\0\0") + message(b"S", b""))
    msgs = c.read_until(b"Z")
    assert errors(msgs)[0]["C"] == "22007", msgs
    # And correctly: text parameters, binary results.
    c.send(message(b"B", b"\0s1\0\0\0\0\x02\0\0\0\x01a\0\0\0\x132023-11-14 22:14:00\0\x01\0\x01")
           + message(b"E", b"\0\0\0\0\0") + message(b"S", b""))
    msgs = c.read_until(b"Z")
    rows = [b for t, b in msgs if t == b"D"]
    assert rows == [struct.pack("!hi", 1, 8) + struct.pack("!d", 15.0)], msgs
    # A binary parameter with the wrong width
    c.send(message(b"P", b"s2\0SELECT $1::BIGINT + 1\0\0\x01\0\0\0\x14")
           + message(b"B", b"\0s2\0\0\x01\0\x01\0\x01\0\0\0\x03abc\0\0")
           + message(b"S", b""))
    msgs = c.read_until(b"Z")
    assert errors(msgs)[0]["C"] == "22P02", msgs
    assert c.query("SELECT 1")[-1][0] == b"Z"


def test_unknown_tables_and_statements_are_errors_not_disconnects(pg_server, db, raw):
    c = raw()
    msgs = c.query("SELECT 1 AS a; SELECT * FROM nosuch; SELECT 2")
    types = [t for t, _ in msgs]
    assert types == [b"T", b"D", b"C", b"E", b"Z"], msgs  # the rest of a failed simple query is skipped
    assert errors(msgs)[0]["C"] == "42P01"
    c.send(message(b"B", b"\0nostmt\0\0\0\0\0\0\0") + message(b"S", b""))
    assert errors(c.read_until(b"Z"))[0]["C"] == "26000"
    c.send(message(b"E", b"noportal\0\0\0\0\0") + message(b"S", b""))
    assert errors(c.read_until(b"Z"))[0]["C"] == "34000"


def test_cancel_request_stops_a_long_query(pg_server, db):
    c = psycopg.connect(pg_server.dsn(db), autocommit=True)
    result = {}

    def run():
        t = time.time()
        try:
            c.execute(SLOW)
            result["outcome"] = "finished"
        except psycopg.Error as e:
            result["outcome"] = e.sqlstate
        result["seconds"] = time.time() - t

    th = threading.Thread(target=run)
    th.start()
    with psycopg.connect(pg_server.dsn(db), autocommit=True) as o:
        deadline = time.time() + 30
        while time.time() < deadline:
            active = o.execute("SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%generate_series%'").fetchone()[0]
            if active == 2:  # the slow query and this one
                break
            time.sleep(0.1)
        c.cancel_safe()
        th.join(30)
        assert result["outcome"] == "57014", result
        assert c.execute("SELECT 1").fetchone() == (1,)  # the session goes on
        assert o.execute("SELECT count(*) FROM pg_stat_activity WHERE state = 'active'").fetchone() == (1,)
    c.close()


def test_disconnect_mid_query_frees_the_session(pg_server, db):
    c = RawConn(pg_server.pg_port, db)
    pid = c.pid
    c.send(message(b"Q", SLOW.encode() + b"\0"))
    with psycopg.connect(pg_server.dsn(db), autocommit=True) as o:
        q = "SELECT state FROM pg_stat_activity WHERE pid = %s"
        deadline = time.time() + 30
        while o.execute(q, (pid,)).fetchall() != [("active",)] and time.time() < deadline:
            time.sleep(0.1)
        assert o.execute(q, (pid,)).fetchall() == [("active",)]
        c.sock.close()
        deadline = time.time() + 10
        while o.execute(q, (pid,)).fetchall() and time.time() < deadline:
            time.sleep(0.1)
        assert o.execute(q, (pid,)).fetchall() == []  # the query was dropped, not left running


def test_startup_refusals(pg_server):
    s = socket.create_connection(("127.0.0.1", pg_server.pg_port), timeout=10)
    s.sendall(struct.pack("!ii", 8, 80877103))  # SSLRequest
    assert s.recv(1) == b"N"
    s.sendall(startup_packet("no_such_database"))
    data = s.recv(65536)
    assert data[:1] == b"E" and b"3D000" in data
    s.close()
    s = socket.create_connection(("127.0.0.1", pg_server.pg_port), timeout=10)
    s.sendall(struct.pack("!ii", 8, 0x00020000))  # protocol 2.0
    data = s.recv(65536)
    assert data[:1] == b"E" and b"0A000" in data
    s.close()


def test_non_loopback_without_password_refuses_to_start(make_server, tmp_path):
    from conftest import sundial_bin

    r = subprocess.run([sundial_bin(), "serve", "--data-dir", str(tmp_path / "d"), "--http-addr", "127.0.0.1:0", "--pg-addr", "0.0.0.0:0"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--pg-password" in r.stderr, r.stderr
    s = make_server("--pg-addr", "0.0.0.0:0", "--pg-allow-no-password", "true")
    with psycopg.connect(s.dsn("postgres"), autocommit=True) as c:
        assert c.execute("SELECT 1").fetchone() == (1,)

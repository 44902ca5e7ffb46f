"""The cross-check's normalisation of TSBS runners' printed answers (bench/lib/report_answers.py), on the shapes
each runner prints, without servers."""

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "lib"))
import report_answers as ra  # noqa: E402

T0 = "2016-01-01T00:00:00Z"
NS = 1451606400 * 10**9


def printed_with_prefix(obj, qid):
    """As tsbs_run_queries_influx/questdb print: json.MarshalIndent with an `ID n: ` prefix after line 1."""
    lines = json.dumps(obj, indent=2).splitlines()
    return "\n".join([lines[0]] + [f"ID {qid}: {ln}" for ln in lines[1:]]) + "\n\n"


def test_parse_printed_skips_the_runner_statistics():
    a = {"influxql": "SELECT 1", "response": {"results": [{"statement_id": 0}]}}
    b = {"influxql": "SELECT 2", "response": {"results": []}}
    text = ("Burn-in …\n" + printed_with_prefix(a, 0) + "After 1 queries with 1 workers:\n"
            + printed_with_prefix(b, 1) + "Run complete after 2 queries\n")
    assert list(ra.parse_printed(text)) == [a, b]


def test_influx_questdb_and_sql_shapes_normalise_alike():
    influx = {"influxql": "q", "response": {"results": [{"series": [
        {"name": "cpu", "tags": {"hostname": "host_1"}, "columns": ["time", "max_usage_user", "max_usage_system"],
         "values": [[T0, 58, 2], ["2016-01-01T00:01:00Z", None, None]]}]}]}}  # an empty bucket
    questdb = {"influxql": "q", "response": {
        "columns": [{"name": "timestamp", "type": "TIMESTAMP"}, {"name": "hostname", "type": "SYMBOL"},
                    {"name": "max", "type": "LONG"}, {"name": "max1", "type": "LONG"}],
        "dataset": [["2016-01-01T00:00:00.000000Z", "host_1", 58, 2]]}}
    pg = {"query": "q", "results": [{"hour": "2016-01-01T00:00:00Z", "hostname": "host_1", "max_usage_user": 58,
                                     "max_usage_system": "2.0000000000000000", "tags_id": 7}]}
    ch = {"query": "q", "results": [{"created_at": T0, "time": "2016-01-01 00:00:00 +0000", "hostname": "host_1",
                                     "usage_user": 58.0, "usage_system": 2, "region": "eu-west-1"}]}
    want = [(NS, ("host_1",), (2.0, 58.0))]
    assert ra.normalise("influx", influx)[1] == want
    assert ra.normalise("questdb", questdb)[1] == want
    assert ra.normalise("timescaledb", pg)[1] == want
    assert ra.normalise("clickhouse", ch)[1] == want


def test_compare_tolerance_and_differences():
    a = [(NS, ("host_1",), (1.0, 2.0))]
    assert ra.compare(a, [(NS, ("host_1",), (1.0 + 1e-9, 2.0))]) is None
    assert "value" in ra.compare(a, [(NS, ("host_1",), (1.0, 2.1))])
    assert "rows" in ra.compare(a, [])
    assert "time" in ra.compare(a, [(NS + 1, ("host_1",), (1.0, 2.0))])
    # one side without host names (SQL SELECT * returns tags_id): compared without them
    assert ra.compare(a, [(NS, (), (1.0, 2.0))]) is None


def test_question_sees_hosts_and_seconds():
    q_influx = "SELECT * from cpu where usage_user > 90.0 and (hostname = 'host_9') and time >= '2016-01-01T00:40:34Z'"
    q_pg = "SELECT * FROM cpu WHERE time >= '2016-01-01 00:40:34.138978 +0000' AND hostname IN ('host_9')"
    q_other = "SELECT * FROM cpu WHERE time >= '2016-01-01 00:14:41.138978 +0000' AND hostname IN ('host_5')"
    assert ra.question(q_influx) == ra.question(q_pg) != ra.question(q_other)
    # On the 10 s data grid, `>= …:50Z` holds the row at :50 and `>= …:50.3` does not: another question.
    assert ra.question("time >= '2016-01-01T00:40:50Z'") != ra.question("time >= '2016-01-01 00:40:50.3 +0000'")
    assert ra.question("time >= '2016-01-01T00:40:51Z'") == ra.question("time >= '2016-01-01 00:40:51.3 +0000'")


def test_definition_difference_only_across_order_conventions():
    assert ra.definition_difference("groupby-orderby-limit", "influx", "timescaledb")
    assert ra.definition_difference("groupby-orderby-limit", "influx", "questdb") is None
    assert ra.definition_difference("lastpoint", "influx", "timescaledb") is None

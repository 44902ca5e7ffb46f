"""Compare two InfluxDB 1.x HTTP answers the way a compatible server is judged.

Rules (tests/compat/README.md):
- HTTP status codes must be equal.
- An `error` key must be present in one answer exactly when it is present in the other (top level or per
  statement); error texts are not compared.
- Same structure: `results` (same length, `statement_id`s, the same keys), `series` present in both or neither,
  each series with the same `name`, `tags`, `columns` and `values`. The series-level `"partial": true` flag is
  ignored (InfluxDB 1.6 sets it on any series longer than 10,000 rows, influxdata/influxdb#8014).
- Numbers are equal if |a−b| ≤ max(1e-9, 1e-9·max(|a|,|b|)) (JSON `3` and `3.0` are the same number); null
  only equals null; strings and booleans exactly.
- Rows of one series that share a timestamp may come in any order (compared as a multiset), unless
  `strict_tie_order`.

Also a command line to diff two live servers:
    python3 tests/compat/influx_compare.py URL_A URL_B "SELECT …" [--db benchmark] [--epoch ns]
"""

import json
import math
import sys
from pathlib import Path

IGNORED_SERIES_KEYS = {"partial"}


class Diff(Exception):
    def __init__(self, path, msg, ref=None, got=None):
        super().__init__(f"{path}: {msg}")
        self.path, self.msg, self.ref, self.got = path, msg, ref, got


def numbers_equal(a, b) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return abs(a - b) <= max(1e-9, 1e-9 * max(abs(a), abs(b)))


def _is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def cells_equal(a, b) -> bool:
    if _is_num(a) and _is_num(b):
        return numbers_equal(float(a), float(b))
    if type(a) is not type(b):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(cells_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(cells_equal(a[k], b[k]) for k in a)
    return a == b  # None, str, bool


def _cell(path, a, b):
    if not cells_equal(a, b):
        raise Diff(path, "values differ", a, b)


def _keys(path, a: dict, b: dict, ignore=()):
    ka, kb = set(a) - set(ignore), set(b) - set(ignore)
    if ka != kb:
        raise Diff(path, f"keys differ: only in reference {sorted(ka - kb)}, only in candidate {sorted(kb - ka)}",
                   sorted(ka), sorted(kb))


def _rows(path, ref_rows, got_rows, strict_tie_order, has_time):
    """Compare `values`; with a leading time column, rows sharing a time may be permuted (not strict)."""
    if not isinstance(ref_rows, list) or not isinstance(got_rows, list):
        raise Diff(path, "values is not a list in both", type(ref_rows).__name__, type(got_rows).__name__)
    for i, (a, b) in enumerate(zip(ref_rows, got_rows)):
        if not isinstance(a, list) or not isinstance(b, list) or len(a) != len(b):
            raise Diff(f"{path}[{i}]", "row shapes differ", a, b)
        if has_time and a and not cells_equal(a[0], b[0]):  # the order of times must agree
            raise Diff(f"{path}[{i}][0]", "time differs", a[0], b[0])
    if len(ref_rows) != len(got_rows):
        n = min(len(ref_rows), len(got_rows))
        extra = ("reference", ref_rows[n]) if len(ref_rows) > n else ("candidate", got_rows[n])
        raise Diff(path, f"{len(ref_rows)} rows in reference, {len(got_rows)} in candidate; first extra row "
                         f"(in {extra[0]}, index {n}): {extra[1]}", len(ref_rows), len(got_rows))
    i = 0
    while i < len(ref_rows):
        j = i + 1
        while has_time and j < len(ref_rows) and ref_rows[j] and ref_rows[j][0] == ref_rows[i][0]:
            j += 1
        if strict_tie_order or j - i == 1 or all(cells_equal(a, b) for a, b in zip(ref_rows[i:j], got_rows[i:j])):
            for k in range(i, j):
                for c, (a, b) in enumerate(zip(ref_rows[k], got_rows[k])):
                    _cell(f"{path}[{k}][{c}]", a, b)
        else:
            unused = list(got_rows[i:j])
            for k in range(i, j):
                hit = next((u for u, row in enumerate(unused) if cells_equal(ref_rows[k], row)), None)
                if hit is None:
                    raise Diff(f"{path}[{k}]", f"row not found among the candidate's {j - i} rows with the same "
                                               f"time (compared as a multiset)", ref_rows[k], got_rows[i:j])
                unused.pop(hit)
        i = j


def _series(path, a, b, strict_tie_order):
    if not isinstance(a, dict) or not isinstance(b, dict):
        raise Diff(path, "series is not an object in both", a, b)
    _keys(path, a, b, IGNORED_SERIES_KEYS)
    for k in ("name", "tags", "columns"):
        if k in a:
            _cell(f"{path}.{k}", a[k], b[k])
    if "values" in a:
        has_time = isinstance(a.get("columns"), list) and a["columns"][:1] == ["time"]
        _rows(f"{path}.values", a["values"], b["values"], strict_tie_order, has_time)
    for k in set(a) - {"name", "tags", "columns", "values"} - IGNORED_SERIES_KEYS:
        _cell(f"{path}.{k}", a[k], b[k])


def _result(path, a, b, strict_tie_order):
    if not isinstance(a, dict) or not isinstance(b, dict):
        raise Diff(path, "result is not an object in both", a, b)
    _keys(path, a, b)
    for k, v in a.items():
        if k == "error":
            continue  # presence compared by _keys, text not compared
        if k == "series":
            if not isinstance(v, list) or not isinstance(b[k], list):
                raise Diff(f"{path}.series", "not a list in both", v, b[k])
            for i, (sa, sb) in enumerate(zip(v, b[k])):
                _series(f"{path}.series[{i}]", sa, sb, strict_tie_order)
            if len(v) != len(b[k]):
                n = min(len(v), len(b[k]))
                extra = v[n] if len(v) > n else b[k][n]
                raise Diff(f"{path}.series", f"{len(v)} series in reference, {len(b[k])} in candidate; first "
                                             f"extra: name={extra.get('name')!r} tags={extra.get('tags')}",
                           len(v), len(b[k]))
        else:
            _cell(f"{path}.{k}", v, b[k])


def compare(ref_status, ref_doc, got_status, got_doc, strict_tie_order=False):
    """Raise Diff at the first difference between two answers (status, parsed JSON body or None)."""
    if ref_status != got_status:
        raise Diff("status", "HTTP status differs", ref_status, got_status)
    if isinstance(ref_doc, dict) and isinstance(got_doc, dict):
        if "error" in ref_doc and "results" not in ref_doc:
            # An error body: InfluxDB clients read only `error`. Sundial may add keys beside it (the line and
            # column of each rejected line, counts), which a client of InfluxDB never looks for.
            if "error" not in got_doc:
                raise Diff("$", "the reference answers with an error, the candidate without", ref_doc, got_doc)
            return
        _keys("$", ref_doc, got_doc)
        if "results" in ref_doc:
            ra, rb = ref_doc["results"], got_doc["results"]
            if not isinstance(ra, list) or not isinstance(rb, list) or len(ra) != len(rb):
                raise Diff("results", "number of statement results differs", ra, rb)
            for i, (a, b) in enumerate(zip(ra, rb)):
                _result(f"results[{i}]", a, b, strict_tie_order)
    elif (ref_doc is None) != (got_doc is None) or type(ref_doc) is not type(got_doc):
        raise Diff("$", "body differs in kind (JSON object / other / empty)", _short(ref_doc), _short(got_doc))


def _short(v, n=600):
    s = json.dumps(v) if not isinstance(v, str) else v
    return s if len(s) <= n else s[:n] + f"… ({len(s)} chars)"


def explain(diff: Diff, request: str, ref_resp, got_resp) -> str:
    """A readable failure message: the request, the first differing path, both values, both bodies (cut)."""
    return "\n".join([
        f"request:   {request}",
        f"first difference at {diff.path}: {diff.msg}",
        f"  reference (InfluxDB): {_short(diff.ref)}",
        f"  candidate:            {_short(diff.got)}",
        f"reference answer ({ref_resp.status}): {_short(ref_resp.body.decode(errors='replace'), 1500)}",
        f"candidate answer ({got_resp.status}): {_short(got_resp.body.decode(errors='replace'), 1500)}",
    ])


def main(argv):
    import argparse
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "lib"))
    import httpapi

    p = argparse.ArgumentParser(description="Send one InfluxQL query to two servers and compare the answers.")
    p.add_argument("reference_url")
    p.add_argument("candidate_url")
    p.add_argument("query")
    p.add_argument("--db", default="benchmark")
    p.add_argument("--epoch")
    p.add_argument("--method", default="POST")
    p.add_argument("--strict-tie-order", action="store_true")
    a = p.parse_args(argv)
    ref = httpapi.query(a.reference_url, a.query, db=a.db, epoch=a.epoch, method=a.method)
    got = httpapi.query(a.candidate_url, a.query, db=a.db, epoch=a.epoch, method=a.method)
    try:
        compare(ref.status, ref.json(), got.status, got.json(), a.strict_tie_order)
    except Diff as d:
        print(explain(d, a.query, ref, got))
        return 1
    print(f"equal ({ref.status}): {_short(ref.body.decode(errors='replace'), 400)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

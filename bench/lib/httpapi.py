"""InfluxDB 1.x HTTP API client (stdlib urllib), used against InfluxDB and Sundial alike."""

import gzip as _gzip
import json
import urllib.error
import urllib.parse
import urllib.request


class Response:
    def __init__(self, status: int, headers: dict, body: bytes):
        self.status, self.headers, self.body = status, headers, body

    def json(self):
        """Parsed body, or None when the body is empty or not JSON."""
        try:
            return json.loads(self.body) if self.body.strip() else None
        except ValueError:
            return None

    def __repr__(self):
        return f"<{self.status} {self.body[:200]!r}>"


def request(method: str, base_url: str, path: str, params=None, body: bytes = None, headers=None,
            timeout: float = 120.0) -> Response:
    """One HTTP request; HTTP error statuses are returned, not raised. `params` is a dict or a list of pairs."""
    url = base_url.rstrip("/") + path
    if params:
        url += "?" + urllib.parse.urlencode(params)
    req = urllib.request.Request(url, data=body, method=method, headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return Response(r.status, dict(r.headers), r.read())
    except urllib.error.HTTPError as e:
        return Response(e.code, dict(e.headers), e.read())


def query(base_url: str, q: str, db: str = None, epoch: str = None, method: str = "POST", timeout: float = 300.0,
          extra_params=None) -> Response:
    """`/query` the way tsbs_run_queries_influx sends it: parameters in the URL, empty POST body."""
    params = {"q": q}
    if db is not None:
        params["db"] = db
    if epoch is not None:
        params["epoch"] = epoch
    params.update(extra_params or {})
    return request(method, base_url, "/query", params, body=b"" if method == "POST" else None, timeout=timeout)


def write(base_url: str, db: str, lines: bytes, precision: str = None, gzip: bool = False,
          timeout: float = 300.0, extra_params=None) -> Response:
    params = {}
    if db is not None:
        params["db"] = db
    if precision:
        params["precision"] = precision
    params.update(extra_params or {})
    headers = {"Content-Type": "text/plain"}
    if gzip:
        lines = _gzip.compress(lines)
        headers["Content-Encoding"] = "gzip"
    return request("POST", base_url, "/write", params, body=lines, headers=headers, timeout=timeout)


def create_database(base_url: str, db: str) -> Response:
    """The exact request tsbs_load_influx sends to create its database (GET, consistency=all)."""
    r = request("GET", base_url, "/query",
                {"consistency": "all", "q": f"CREATE DATABASE {db} WITH REPLICATION 1"}, timeout=60)
    if r.status != 200:
        raise RuntimeError(f"CREATE DATABASE {db} on {base_url}: {r.status} {r.body[:500]!r}")
    return r


def count_rows(base_url: str, db: str, measurement: str = "cpu", field: str = "usage_user") -> int:
    """`SELECT count(field) FROM measurement`; 0 when the answer has no series (nothing stored yet)."""
    r = query(base_url, f"SELECT count({field}) FROM {measurement}", db=db)
    doc = r.json()
    if r.status != 200 or not isinstance(doc, dict):
        raise RuntimeError(f"count query on {base_url}: {r.status} {r.body[:500]!r}")
    res = (doc.get("results") or [{}])[0]
    if "error" in res:
        raise RuntimeError(f"count query on {base_url}: {res['error']}")
    series = res.get("series") or []
    return int(series[0]["values"][0][1]) if series else 0


def write_file_in_batches(base_url: str, db: str, path, lines_per_batch: int = 10_000) -> int:
    """POST a line-protocol file in batches of `lines_per_batch` lines; every batch must answer 204."""
    n = 0
    batch = []
    with open(path, "rb") as f:
        for line in f:
            batch.append(line)
            if len(batch) == lines_per_batch:
                _post_batch(base_url, db, batch)
                n += len(batch)
                batch = []
    if batch:
        _post_batch(base_url, db, batch)
        n += len(batch)
    return n


def _post_batch(base_url, db, batch):
    r = write(base_url, db, b"".join(batch))
    if r.status != 204:
        raise RuntimeError(f"write of {len(batch)} lines to {base_url}: {r.status} {r.body[:500]!r}")

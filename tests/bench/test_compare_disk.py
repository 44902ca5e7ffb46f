"""bench/compare's free-disk check: a scenario's data files already in the cache take no more room, and only
those of the run's own peers and scenario count."""

import importlib.machinery
import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def load_compare():
    loader = importlib.machinery.SourceFileLoader("bench_compare", str(ROOT / "bench" / "compare"))
    spec = importlib.util.spec_from_loader("bench_compare", loader)
    mod = importlib.util.module_from_spec(spec)
    loader.exec_module(mod)
    return mod


def test_cached_data_files_take_no_more_room(tmp_path, monkeypatch):
    monkeypatch.setenv("SUNDIAL_CACHE", str(tmp_path))
    compare = load_compare()
    args = compare.parse_args(["--profile", "quick", "--peers", "questdb", "--scenarios", "1,2"])
    plan = compare.scenario_plan(args)

    def needs():
        compare.check_disk(plan, args)
        return [sc["disk_needed_bytes"] for sc in plan]

    before = needs()
    sc = plan[0]

    def cache(fmt, size, scale=sc["scale"]):
        path = compare.tsbs_tools.data_file_path(scale, sc["start"], sc["end"], args.seed, fmt)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "wb") as f:
            f.truncate(size)  # sparse: its size is what counts

    # Files of a format no peer of the run reads, and of another scenario's scale, change nothing.
    cache("timescaledb", 10**6)
    cache("influx", 10**6, scale=sc["scale"] + 1)
    assert needs() == before
    # Sundial's and QuestDB's files of scenario 1: that much less, for scenario 1 only.
    cache("influx", 3 * 10**6)
    cache("questdb", 4 * 10**6)
    after = needs()
    assert (before[0] - after[0], after[1]) == (7 * 10**6, before[1]), (before, after)
    # Never below what the databases themselves need.
    cache("questdb", 10**11)
    assert needs()[0] == sc["rows"] * compare.DB_BYTES_PER_ROW_WORST + 2 * 2**30

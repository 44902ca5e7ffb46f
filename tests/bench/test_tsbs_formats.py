"""The data cache's shared files (bench/lib/tsbs_tools.py SAME_BYTES_AS): a format only shares another's cached
file if TSBS's generator writes the same bytes for both. Generated here at a small size with the pinned TSBS, so
a TSBS revision that changes one serializer fails this instead of loading a peer with another format's data."""

import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench" / "lib"))
import tsbs_tools  # noqa: E402

START, END = "2016-01-01T00:00:00Z", "2016-01-01T00:30:00Z"


def generate(fmt: str, tmp_path) -> bytes:
    out = tmp_path / f"{fmt}.dat"
    argv = tsbs_tools.data_argv(7, START, END, 123, file=out, fmt=fmt)
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return out.read_bytes()


@pytest.mark.parametrize("fmt,same_as", sorted(tsbs_tools.SAME_BYTES_AS.items()))
def test_formats_sharing_a_file_generate_the_same_bytes(fmt, same_as, tmp_path):
    tsbs_tools.ensure_tools(["tsbs_generate_data"])
    got, want = generate(fmt, tmp_path), generate(same_as, tmp_path)
    assert len(want) > 7 * 180 * 50, f"{same_as}: only {len(want)} bytes for 7 hosts × 30 min"
    assert got == want, f"TSBS's {fmt} data differs from its {same_as} data: they cannot share a cached file"


def test_shared_formats_map_to_one_cached_path():
    for fmt, same_as in tsbs_tools.SAME_BYTES_AS.items():
        assert tsbs_tools.data_file_path(7, START, END, 123, fmt) == tsbs_tools.data_file_path(7, START, END, 123,
                                                                                               same_as)
    assert tsbs_tools.data_file_path(7, START, END, 123, "questdb") != tsbs_tools.data_file_path(7, START, END, 123,
                                                                                                 "influx")

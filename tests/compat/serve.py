#!/usr/bin/env python3
"""Start one server loaded with the differential test's data, print its URL, run until Ctrl-C.

    python3 tests/compat/serve.py influxdb      # the reference
    python3 tests/compat/serve.py sundial       # SUNDIAL_BIN or the default build path

Then compare one query on the two:
    python3 tests/compat/influx_compare.py http://127.0.0.1:PORT_A http://127.0.0.1:PORT_B "SELECT …"
"""

import argparse
import signal
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import compat_data  # noqa: E402
import peers_influxdb  # noqa: E402
import sundial_server  # noqa: E402


def _interrupt(*_):
    raise KeyboardInterrupt  # SIGTERM: stop the server and remove the scratch dir like Ctrl-C does


def main():
    signal.signal(signal.SIGTERM, _interrupt)
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("target", choices=["influxdb", "sundial"])
    p.add_argument("--dir", type=Path, help="scratch dir (default: a new temporary dir, removed at exit)")
    a = p.parse_args()
    root = a.dir or Path(tempfile.mkdtemp(prefix=f"compat-{a.target}-"))
    inputs = compat_data.ensure_inputs()
    if a.target == "influxdb":
        peers_influxdb.ensure_installed()
        server = peers_influxdb.InfluxDB(root)
    else:
        server = sundial_server.Sundial(root, sundial_server.find_binary(allow_debug=True))
    try:
        server.start()
        compat_data.prepare(server.url, inputs)
        print(f"{a.target} ready at {server.url} (databases {compat_data.DB}, {compat_data.WRITES_DB}); "
              f"log {server.log_path}; Ctrl-C to stop", flush=True)
        while server.running():
            time.sleep(1)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()
        if a.dir is None:
            compat_data.remove(root)


if __name__ == "__main__":
    main()

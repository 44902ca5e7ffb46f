#!/bin/bash
# committed-threads.sh BIN FILE [server flags...]: ../2026-11-28-epyc-hotquick/settled.sh up to the count
# that sees every row (committed), without waiting for the data to settle, printing also each kind of
# server thread's CPU seconds at that point (the write path runs on `tokio-rt-worker` threads, the memtable
# flush on `sundial-flush`, the WAL's fsyncs on `sundial-wal`): a write-path change shows in
# `tokio-rt-worker`, which the flush's share of the noise does not blur. PERF=1 PERFARGS="..." and
# AFTER_SETTLED='...' work as there.
THREADS=1 SETTLE=0 exec bash "$(dirname "$0")/../2026-11-28-epyc-hotquick/settled.sh" "$@"

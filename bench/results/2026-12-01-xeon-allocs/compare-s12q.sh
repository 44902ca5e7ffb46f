#!/bin/bash
# Scenarios 1 and 2 (full profile) with queries, f1f2eaa against the peers best on some figure of those
# scenarios in the runs before (QuestDB, VictoriaMetrics), one load each: ../2026-11-30-xeon-wal2/run.sh with
# this binary and directory.
SUNDIAL_BIN=/root/.cache/sundial/compare-bin/sundial-f1f2eaa OUT=bench/results/2026-12-01-xeon-allocs/compare-s12q \
  exec bash "$(dirname "$0")/../2026-11-30-xeon-wal2/run.sh"

#!/bin/bash
# Scenarios 1 and 2 (full profile) with queries, f872cd6 against QuestDB and VictoriaMetrics, one load each, on
# an AMD EPYC: ../2026-11-30-xeon-wal2/run.sh with this binary and directory.
SUNDIAL_BIN=/root/.cache/sundial/compare-bin/sundial-f872cd6 OUT=bench/results/2026-12-01-epyc-pack/compare-s12q \
  exec bash "$(dirname "$0")/../2026-11-30-xeon-wal2/run.sh"

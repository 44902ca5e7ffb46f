#!/bin/bash
# Ingest of scenarios 4 and 5 (full profile, three loads each per database) with f1f2eaa (fewer allocations
# per new series) against QuestDB: ../2026-11-30-xeon-unlocked/compare-s45.sh with this binary and directory.
SUNDIAL_BIN=/root/.cache/sundial/compare-bin/sundial-f1f2eaa R=bench/results/2026-12-01-xeon-allocs/compare-s45 \
  exec bash "$(dirname "$0")/../2026-11-30-xeon-unlocked/compare-s45.sh"

#!/bin/bash
# Ingest of scenarios 4 and 5 of the full profile, Sundial (f576077: a fold takes a pack's series in one
# piece) against QuestDB, three loads per database and scenario: ../2026-11-30-xeon-unlocked/compare-s45.sh
# with this run's binary and directory.
SUNDIAL_BIN=/root/.cache/sundial/compare-bin/sundial-f576077 R=bench/results/2026-11-30-xeon-packs/compare-s45 \
  exec bash "$(dirname "$0")/../2026-11-30-xeon-unlocked/compare-s45.sh"

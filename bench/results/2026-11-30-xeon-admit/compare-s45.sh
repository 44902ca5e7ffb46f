#!/bin/bash
# Ingest of scenarios 4 and 5 of the full profile, Sundial (40a88ac: the key cache after a restart and its
# admission, flushed memtables freed by the flush thread) against QuestDB, three loads per database and
# scenario: ../2026-11-30-xeon-unlocked/compare-s45.sh (which ran 3467399) with this run's binary and directory.
SUNDIAL_BIN=/root/.cache/sundial/compare-bin/sundial-40a88ac R=bench/results/2026-11-30-xeon-admit/compare-s45 \
  exec bash "$(dirname "$0")/../2026-11-30-xeon-unlocked/compare-s45.sh"

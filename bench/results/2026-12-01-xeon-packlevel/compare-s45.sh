#!/bin/bash
# Ingest of scenarios 4 and 5 (full profile, three loads each per database) with 79a4601 (packs of one-row
# series at pco level 3, catalog.log batches by position) against QuestDB:
# ../2026-11-30-xeon-unlocked/compare-s45.sh with this binary and directory.
SUNDIAL_BIN=/root/.cache/sundial/compare-bin/sundial-79a4601 R=bench/results/2026-12-01-xeon-packlevel/compare-s45 \
  exec bash "$(dirname "$0")/../2026-11-30-xeon-unlocked/compare-s45.sh"

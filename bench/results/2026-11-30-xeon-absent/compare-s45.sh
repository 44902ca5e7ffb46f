#!/bin/bash
# Ingest of scenarios 4 and 5 of the full profile, Sundial (1fadb4f: new values added without a second
# lookup, a flush's columns gathered from one run) against QuestDB, three loads per database and scenario:
# ../2026-11-30-xeon-unlocked/compare-s45.sh with this run's binary and directory.
SUNDIAL_BIN=/root/.cache/sundial/compare-bin/sundial-1fadb4f R=bench/results/2026-11-30-xeon-absent/compare-s45 \
  exec bash "$(dirname "$0")/../2026-11-30-xeon-unlocked/compare-s45.sh"

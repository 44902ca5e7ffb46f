#!/bin/bash
# compare-s45.sh again with the session's last code (8d62613: summaries too take a pack's series together;
# the folds' pack pieces of f576077), an hour later: ../2026-11-30-xeon-unlocked/compare-s45.sh with this
# binary and directory.
SUNDIAL_BIN=/root/.cache/sundial/compare-bin/sundial-8d62613 R=bench/results/2026-11-30-xeon-packs/compare-s45b \
  exec bash "$(dirname "$0")/../2026-11-30-xeon-unlocked/compare-s45.sh"

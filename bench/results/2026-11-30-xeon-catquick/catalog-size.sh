#!/bin/bash
# catalog-size.sh BIN FILE: ../2026-11-28-epyc-hotquick/settled.sh (load FILE, wait until committed and
# settled), then the size of catalog.log and of the data directory.
export AFTER_SETTLED='echo "catalog.log $(stat -c %s $CACHE/scratch/loadtest/catalog.log) bytes, data directory $(du -sb $CACHE/scratch/loadtest | cut -f1) bytes"'
exec bash "$(dirname "$0")/../2026-11-28-epyc-hotquick/settled.sh" "$@"

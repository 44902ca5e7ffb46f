#!/bin/bash
# load-ab.sh FILE ROWS "BIN ARGS"...: committed rows/s and server CPU of each binary, alternating.
# The measurement NOTES.md quotes; its one copy now lives beside the next run, which also prints each
# server's minor page faults in front of the same line.
exec bash "$(dirname "$0")/../2026-11-26-epyc10/load-ab.sh" "$@"

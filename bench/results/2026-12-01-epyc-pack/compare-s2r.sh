#!/bin/bash
# Scenario 2 with every query run sized (bench/compare at d0aaf24): compare-s2q.sh into compare-s2r.
OUT=bench/results/2026-12-01-epyc-pack/compare-s2r exec bash "$(dirname "$0")/compare-s2q.sh"

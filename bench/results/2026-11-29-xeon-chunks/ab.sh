#!/bin/bash
# ab.sh ROUNDS FILE BIN... : ../2026-11-28-epyc-hotquick/settled.sh for each binary in turn, ROUNDS times
# (alternating, so that the machine's drift falls on both alike); prints each load's committed and settled
# lines prefixed by the binary's name.
R=$1; F=$2; shift 2
for r in $(seq "$R"); do
  for b in "$@"; do
    bash "$(dirname "$0")/../2026-11-28-epyc-hotquick/settled.sh" "$b" "$F" 2>&1 | grep -E "^committed|^settled" | sed "s|^|$(basename "$b") |"
  done
done

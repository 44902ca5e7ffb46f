#!/bin/bash
# ab-settled.sh A B ROUNDS FILE: ../2026-11-28-epyc-hotquick/settled.sh on FILE, ROUNDS times for each of
# the binaries A and B, alternating: committed (rows/s, server CPU, peak RSS, minor faults) and settled
# (time, server CPU, data size, files) on one line per load.
A=$1; B=$2; N=$3; F=$4
for i in $(seq $N); do for X in $A $B; do
 echo "$(basename $X): $(bash "$(dirname "$0")/../2026-11-28-epyc-hotquick/settled.sh" $X $F 2>&1 | grep -E 'committed|settled' | tr '\n' ' ')"
done; done

#!/usr/bin/env bash
# Runs a benchmark binary under callgrind with the instrumentation on only
# around the measured phases that call harness.CallgrindMeasured, one dump
# (callgrind.out.PID.K, named by its "desc: Trigger" line) per phase:
#
#   go test -c -o /tmp/bench.test ./e2e/bench
#   cd /tmp/cg && scripts/callgrind-measured.sh /tmp/bench.test -test.run '^$' -test.bench Tenants -test.benchtime 1500x
#
# A phase's instructions per call are (dump at N - dump at 1) / (N - 1).
# CALLGRIND_OPTS adds options (e.g. "--cache-sim=yes --LL=33554432,16,64").
# Go's preemption signals are off: callgrind does not survive them.
set -euo pipefail
req="$PWD/callgrind.req"
rm -f "$req"
# shellcheck disable=SC2086
GODEBUG=asyncpreemptoff=1 PLATFORM_BENCH_CALLGRIND="$req" \
  valgrind --tool=callgrind --instr-atstart=no ${CALLGRIND_OPTS:-} "$@" &
vg=$!
while kill -0 "$vg" 2>/dev/null; do
  if [ -f "$req" ]; then
    # shellcheck disable=SC2046
    callgrind_control $(cat "$req") "$vg" >/dev/null
    rm -f "$req"
  fi
  sleep 0.2
done
wait "$vg"

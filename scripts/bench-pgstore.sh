#!/usr/bin/env bash
# Measures the Postgres event store's parallel appends/s beside pgbench's
# TPC-B-like load on the same server in the same run, and prints the ratio.
#
#   PLATFORM_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:25432/postgres?sslmode=disable scripts/bench-pgstore.sh
#
# PGBENCH (default /usr/lib/postgresql/15/bin/pgbench), CLIENTS (8) and
# SECONDS_EACH (10) adjust it. pgbench runs in a scratch database it drops.
set -euo pipefail
: "${PLATFORM_TEST_POSTGRES_URL:?set PLATFORM_TEST_POSTGRES_URL to the admin URL of the test server}"
PGBENCH=${PGBENCH:-/usr/lib/postgresql/15/bin/pgbench}
CLIENTS=${CLIENTS:-8}
SECONDS_EACH=${SECONDS_EACH:-10}
cd "$(dirname "$0")/.."

scratch="pgbench_scratch_$$"
base=${PLATFORM_TEST_POSTGRES_URL%%\?*}
query=${PLATFORM_TEST_POSTGRES_URL#"$base"}
scratch_url="${base%/*}/${scratch}${query}"
psql -q "$PLATFORM_TEST_POSTGRES_URL" -c "CREATE DATABASE $scratch"
trap 'psql -q "$PLATFORM_TEST_POSTGRES_URL" -c "DROP DATABASE IF EXISTS $scratch WITH (FORCE)"' EXIT

"$PGBENCH" -q -i -s 1 "$scratch_url" >/dev/null 2>&1
out=$(mktemp)
"$PGBENCH" -b tpcb-like -c "$CLIENTS" -j 2 -T "$SECONDS_EACH" "$scratch_url" >"$out" 2>/dev/null
tps=$(awk '/^tps = / {print $3; exit}' "$out")
echo "pgbench -b tpcb-like -c $CLIENTS -j 2 -T $SECONDS_EACH: $tps TPS"

go test -run '^$' -bench AppendParallel -benchtime "${SECONDS_EACH}s" ./events/postgres/ >"$out"
aps=$(awk '/appends\/s/ {for (i = 1; i < NF; i++) if ($(i+1) == "appends/s") print $i}' "$out")
rm -f "$out"
echo "events/postgres BenchmarkAppendParallel (8 writers): $aps appends/s"
awk -v a="$aps" -v t="$tps" 'BEGIN { printf "ratio appends/s : pgbench TPS = %.2f\n", a / t }'

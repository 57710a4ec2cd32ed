#!/usr/bin/env bash
# The benchmark command: builds the platform and the load tool
# (cmd/platformbench), starts the platform fresh and drives it from that
# separate process with correctly signed requests, twice:
#
#   1. embedded: the bbolt event log and in-memory read models; baselines
#      are raw appends to a bbolt log on the same disk (same group commit
#      and fsync) and GET /healthz;
#   2. postgres: the Postgres event store and Postgres read models;
#      baselines are raw appends to the Postgres event store on the same
#      server and pgbench -S with the same client count.
#
# It prints one table (rate, p50, p99, the baseline and the ratio to it)
# on stdout; progress goes to stderr.
#
#   scripts/bench.sh            # the full run (several minutes)
#   scripts/bench.sh --quick    # a smoke run, about a minute or two
#   scripts/bench.sh --json     # the rows as JSON instead of the table
#
# BENCH_POSTGRES_URL (an admin URL) uses a running Postgres; otherwise a
# throwaway server is started like scripts/test.sh does. BENCH_ARGS adds
# flags to every `platformbench run` (e.g. "-clients 16 -window 20s");
# BENCH_PG_SCENARIOS picks the Postgres run's scenarios; BENCH_SKIP_PG=1
# runs the embedded half only, BENCH_SKIP_EMBEDDED=1 the Postgres half
# only. The Postgres run's webhook-cost rows offer PATCHes at fixed rates
# (BENCH_COST_RATES, default 100,200,500 per second; each one
# user.profile.updated webhook) and report the system's CPU per delivery,
# the platform's and its Postgres server's (the throwaway server only), and
# the platform database's Postgres transactions per delivery
# (pg_stat_database), after an idle row. BENCH_REBUILD_EVENTS /
# BENCH_SKIP_REBUILD: the rebuild rows (below). BENCH_CPUPROFILE_DIR (a directory) writes
# each platform's CPU profile of its whole run there (embedded.pprof,
# postgres.pprof; PLATFORM_CPUPROFILE), with its binary (platform).
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'bench.sh: %s\n' "$*" >&2; }
die() {
	say "error: $*"
	exit 1
}

quick="" json=""
for a in "$@"; do
	case "$a" in
	--quick) quick=-quick ;;
	--json) json=-json ;;
	*) die "unknown argument $a (--quick, --json)" ;;
	esac
done
read -r -a extra <<<"${BENCH_ARGS:-}"
pg_scenarios=${BENCH_PG_SCENARIOS:-webhook-cost,register,member-upsert,register-paced,member-upsert-paced,snapshot,snapshot-cost,report-pull,verify-hot,verify-many}

work=$(mktemp -d "${TMPDIR:-/tmp}/platform-bench.XXXXXX")
platform_pid="" pgtmp="" pgbin="" admin_url="" dbs=() files=()
cleanup() {
	local rc=$?
	trap - EXIT
	# A run that fails late still prints the rows it measured.
	if [ "$rc" -ne 0 ] && [ "${#files[@]}" -gt 0 ] && [ -x "$work/platformbench" ]; then
		say "printing the ${#files[@]} finished blocks' rows before cleaning up"
		echo "# scripts/bench.sh (stopped by an error; the finished blocks only) — $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores"
		"$work/platformbench" table $json "${files[@]}" || true
	fi
	stop_platform
	if [ -n "$admin_url" ]; then
		for db in "${dbs[@]}"; do psql -q "$admin_url" -c "DROP DATABASE IF EXISTS $db WITH (FORCE)" >/dev/null 2>&1 || true; done
	fi
	if [ -n "$pgtmp" ] && [ -f "$pgtmp/data/postmaster.pid" ]; then
		as_pg "$pgbin/pg_ctl" -D "$pgtmp/data" -m immediate stop >/dev/null 2>&1 || true
	fi
	rm -rf "$work" ${pgtmp:+"$pgtmp"}
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

as_pg() { if [ "$(id -u)" -eq 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
. scripts/ports.sh # the repository root is the working directory (cd above)

say "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) at start; $(go version)"
say "building ./cmd/platform and ./cmd/platformbench into $work"
go build -o "$work/platform" ./cmd/platform
go build -o "$work/platformbench" ./cmd/platformbench

# start_platform NAME [VAR=value ...]: a fresh platform in its own data
# directory on a spare port, with the load-test knobs; waits for /readyz.
start_platform() {
	local name=$1
	shift
	port=$(pick_port) || die "no free port"
	mkdir -p "$work/$name"
	local profile=()
	if [ -n "${BENCH_CPUPROFILE_DIR:-}" ]; then
		mkdir -p "$BENCH_CPUPROFILE_DIR"
		cp "$work/platform" "$BENCH_CPUPROFILE_DIR/platform"
		profile=(PLATFORM_CPUPROFILE="$BENCH_CPUPROFILE_DIR/$name.pprof")
	fi
	token=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
	env PLATFORM_ADDR="127.0.0.1:$port" PLATFORM_DATA_DIR="$work/$name/data" PLATFORM_ADMIN_TOKEN="$token" \
		PLATFORM_RATE_LIMIT=-1 PLATFORM_REPORT_PULL_LIMIT=100000000 PLATFORM_VERIFY_COOLDOWN=0s \
		PLATFORM_WEBHOOK_ALLOW_LOOPBACK=on PLATFORM_LOG_FORMAT=json ${profile[@]+"${profile[@]}"} "$@" \
		"$work/platform" >"$work/$name/platform.log" 2>&1 &
	platform_pid=$!
	local i
	for ((i = 0; i < 300; i++)); do
		if curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1; then
			say "$name platform up on 127.0.0.1:$port (pid $platform_pid)"
			return 0
		fi
		kill -0 "$platform_pid" 2>/dev/null || break
		sleep 0.2
	done
	tail -n 30 "$work/$name/platform.log" >&2 || true
	die "the $name platform did not become ready"
}

stop_platform() {
	if [ -n "$platform_pid" ]; then
		kill -TERM "$platform_pid" 2>/dev/null || true
		wait "$platform_pid" 2>/dev/null || true
		platform_pid=""
	fi
}

run_bench() {
	PLATFORM_ADMIN_TOKEN="$token" "$work/platformbench" run -url "http://127.0.0.1:$port" -platform-pid "$platform_pid" $quick "${extra[@]}" "$@"
}

# ---- 1. embedded ----
if [ "${BENCH_SKIP_EMBEDDED:-0}" != "1" ]; then
	start_platform embedded
	run_bench -store embedded -raw-dir "$work/embedded" -out "$work/embedded.json"
	stop_platform
	files+=("$work/embedded.json")
fi

# ---- 1b. webhook fan-out drain (embedded) ----
# A fresh embedded platform, so no earlier scenario's state or deliveries
# share the window: webhook-fanout-drain delivers -fanout-events profile
# updates to 1 and to 10 endpoints (alternated, -fanout-repeats times),
# resends them as a backlog while the app is suspended and charges the
# platform CPU from the resume to the last receipt per event; the 10-endpoint
# row's ratio is the fan-out ratio (docs/webhook-fanout.md).
# BENCH_SKIP_FANOUT_DRAIN=1 leaves it out.
if [ "${BENCH_SKIP_EMBEDDED:-0}" != "1" ] && [ "${BENCH_SKIP_FANOUT_DRAIN:-0}" != "1" ]; then
	start_platform fanout-drain
	run_bench -store embedded -raw-dir "$work/fanout-drain" -scenarios webhook-fanout-drain -out "$work/fanout-drain.json"
	stop_platform
	files+=("$work/fanout-drain.json")
fi

# ---- 1c. many tenants (embedded) ----
# A fresh embedded platform holding two populations of BENCH_TENANT_USERS
# users each (default 50,000; 2,000 with --quick), made through the API:
# one app, and BENCH_TENANT_APPS apps (default 10,000; 100 with --quick),
# each app with one webhook endpoint. many-tenants measures register,
# snapshot and PATCH-with-a-webhook on each in alternated rounds (one app
# first and last, -tenant-repeats many-app rounds), each window charged
# from a quiet platform to its own deliveries done; the many-app rows give
# the median ratio to one app with its spread (docs/many-tenants.md). Then
# the platform is stopped, started with the default settings, killed with
# SIGKILL and started on the same data: the
# "tenants: kill -9 restart" row is the time to /readyz (polled every
# 0.2 s) and the resident memory. A seeded user is about 4 events and the
# windows (1 s warm-up, 5 s each) add about 250,000: keep the whole under
# 1M events (the defaults make about 650,000).
# BENCH_SKIP_TENANTS=1 leaves it out; BENCH_TENANTS=1 runs it even with
# BENCH_SKIP_EMBEDDED=1 (this block alone: add BENCH_SKIP_PG=1 and
# BENCH_SKIP_REBUILD=1).
if [ "${BENCH_SKIP_TENANTS:-0}" != "1" ] && { [ "${BENCH_SKIP_EMBEDDED:-0}" != "1" ] || [ "${BENCH_TENANTS:-0}" = "1" ]; }; then
	tenant_flags=(-tenant-apps "${BENCH_TENANT_APPS:-10000}" -tenant-users "${BENCH_TENANT_USERS:-50000}" -warmup 1s -window 5s)
	[ -z "$quick" ] || tenant_flags=()
	# The rate limiter is on (per-app buckets are a per-tenant cost), with a
	# limit no window reaches; read-model snapshots are off while measuring:
	# at this size each costs 0.4-1.8 s of CPU every few seconds of writes,
	# a cost of the log's size that lands in whichever window it falls.
	start_platform tenants PLATFORM_RATE_LIMIT=100000000 PLATFORM_SNAPSHOT_EVENTS=100000000 PLATFORM_SNAPSHOT_INTERVAL=24h
	run_bench -store embedded -raw-dir "$work/tenants" -users 10 -scenarios many-tenants ${tenant_flags[@]+"${tenant_flags[@]}"} -out "$work/tenants.json"
	stop_platform # an orderly stop writes the snapshot; then the default settings
	start_platform tenants
	kill -KILL "$platform_pid"
	wait "$platform_pid" 2>/dev/null || true
	platform_pid=""
	began=$(date +%s%N)
	start_platform tenants
	ready_ms=$((($(date +%s%N) - began) / 1000000))
	rss_kb=$(awk '/^VmRSS:/ {print $2}' "/proc/$platform_pid/status")
	anon_kb=$(awk '/^RssAnon:/ {print $2}' "/proc/$platform_pid/status")
	data_mb=$(du -sm "$work/tenants/data" | cut -f1)
	say "tenants: kill -9 and start: /readyz after ${ready_ms} ms, resident ${rss_kb} kB (${anon_kb} kB anonymous), data ${data_mb} MB"
	printf '[{"scenario":"tenants: kill -9 restart","store":"embedded","clients":1,"note":"/readyz %d ms after the start (polled every 0.2 s); resident %d MB (%d MB anonymous) after it; data directory %d MB"}]\n' \
		"$ready_ms" $((rss_kb / 1024)) $((anon_kb / 1024)) "$data_mb" >"$work/tenants-restart.json"
	stop_platform
	files+=("$work/tenants.json" "$work/tenants-restart.json")
	rm -rf "$work/tenants"
fi

# ---- 2. postgres ----
start_postgres() {
	local d
	for d in $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -t/ -k5,5nr); do
		if [ -x "$d/initdb" ] && [ -x "$d/pg_ctl" ]; then pgbin=$d && break; fi
	done
	[ -n "$pgbin" ] || die "no PostgreSQL server binaries under /usr/lib/postgresql (or set BENCH_POSTGRES_URL)"
	pgtmp=$(mktemp -d /tmp/platform-bench-pg.XXXXXX)
	mkdir -p "$pgtmp/sock"
	if [ "$(id -u)" -eq 0 ]; then chown -R postgres: "$pgtmp"; fi
	as_pg "$pgbin/initdb" -D "$pgtmp/data" -A trust -U postgres -E UTF8 --locale=C --no-sync >"$pgtmp/initdb.log" 2>&1 ||
		die "initdb failed: $(tail -n 5 "$pgtmp/initdb.log")"
	local pport i
	pport=$(pick_port) || die "no free port"
	# The same settings as scripts/test.sh's server.
	as_pg "$pgbin/pg_ctl" -D "$pgtmp/data" -l "$pgtmp/postgres.log" -W start -o \
		"-c listen_addresses=127.0.0.1 -c port=$pport -c unix_socket_directories=$pgtmp/sock -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=300" >/dev/null
	for ((i = 0; i < 60; i++)); do
		if "$pgbin/pg_isready" -q -h 127.0.0.1 -p "$pport" -U postgres; then
			admin_url="postgres://postgres@127.0.0.1:$pport/postgres?sslmode=disable"
			say "throwaway postgres on 127.0.0.1:$pport"
			return 0
		fi
		sleep 0.5
	done
	die "postgres did not start: $(tail -n 5 "$pgtmp/postgres.log")"
}

if [ "${BENCH_SKIP_PG:-0}" != "1" ]; then
	if [ -n "${BENCH_POSTGRES_URL:-}" ]; then
		admin_url=$BENCH_POSTGRES_URL
		say "using the Postgres at BENCH_POSTGRES_URL"
	else
		start_postgres
	fi
	pgbench=$(ls -d /usr/lib/postgresql/*/bin/pgbench 2>/dev/null | sort -t/ -k5,5nr | head -n1)
	[ -n "$pgbench" ] || die "pgbench not found under /usr/lib/postgresql/*/bin"
	base=${admin_url%%\?*}
	query=${admin_url#"$base"}
	db_url() { echo "${base%/*}/$1$query"; }
	for db in bench_platform_$$ bench_raw_$$ bench_pgbench_$$; do
		psql -q "$admin_url" -c "CREATE DATABASE $db" >/dev/null
		dbs+=("$db")
	done
	"$pgbench" -q -i -s 10 "$(db_url bench_pgbench_$$)" >/dev/null 2>&1 || die "pgbench -i failed"
	# Report pull: its row is printed twice, against pgbench -S and against
	# the pull floor, a pgbench script of one pull's writes and reads in one
	# transaction (cmd/platformbench/pullfloor.sql, its tables set up in the
	# pgbench database).
	case ",$pg_scenarios," in *,report-pull,*) extra+=(-pull-floor) ;; esac
	start_platform postgres PLATFORM_EVENTSTORE_URL="$(db_url bench_platform_$$)" PLATFORM_POSTGRES_URL="$(db_url bench_platform_$$)" \
		PLATFORM_PORTAL_BASE_URL="http://127.0.0.1"
	pg_pid=0
	if [ -n "$pgtmp" ]; then pg_pid=$(head -n1 "$pgtmp/data/postmaster.pid"); fi
	run_bench -store postgres -raw-store-url "$(db_url bench_raw_$$)" -pgbench "$pgbench" -pgbench-url "$(db_url bench_pgbench_$$)" \
		-postgres-pid "$pg_pid" -pg-stats-url "$admin_url" -pg-stats-db "bench_platform_$$" -webhook-cost-rates "${BENCH_COST_RATES:-100,200,500}" \
		-scenarios "$pg_scenarios" -out "$work/postgres.json"
	stop_platform
	files+=("$work/postgres.json")
fi

# ---- 2c. many tenants on Postgres, rate limiter on ----
# The many-tenants scenario (as block 1c) on the Postgres event store and read
# models with the scheme M limiter on: per-app leases of the shared bucket,
# whose renewals ride each call's own statement (docs/many-tenants.md), and
# the platform database's transactions per call counted. BENCH_PG_TENANTS=1
# runs it, after block 2 or alone (add BENCH_SKIP_EMBEDDED=1
# BENCH_SKIP_TENANTS=1 BENCH_SKIP_PG=1 BENCH_SKIP_REBUILD=1); apps and users
# per population: BENCH_PG_TENANT_APPS, BENCH_PG_TENANT_USERS (10,000 each;
# platformbench's own small ones with --quick).
if [ "${BENCH_PG_TENANTS:-0}" = "1" ]; then
	if [ -z "$admin_url" ]; then
		if [ -n "${BENCH_POSTGRES_URL:-}" ]; then admin_url=$BENCH_POSTGRES_URL; else start_postgres; fi
	fi
	pg_tenants_base=${admin_url%%\?*}
	pg_tenants_db=bench_pgtenants_$$
	pg_tenants_url="${pg_tenants_base%/*}/$pg_tenants_db${admin_url#"$pg_tenants_base"}"
	psql -q "$admin_url" -c "CREATE DATABASE $pg_tenants_db" >/dev/null
	dbs+=("$pg_tenants_db")
	pg_tenant_flags=(-tenant-apps "${BENCH_PG_TENANT_APPS:-10000}" -tenant-users "${BENCH_PG_TENANT_USERS:-10000}")
	[ -z "$quick" ] || pg_tenant_flags=()
	start_platform pg-tenants PLATFORM_EVENTSTORE_URL="$pg_tenants_url" PLATFORM_POSTGRES_URL="$pg_tenants_url" \
		PLATFORM_PORTAL_BASE_URL="http://127.0.0.1" PLATFORM_RATE_LIMIT=100000000
	run_bench -store postgres -users 10 -scenarios many-tenants ${pg_tenant_flags[@]+"${pg_tenant_flags[@]}"} -warmup 1s -window 4s \
		-pg-stats-url "$admin_url" -pg-stats-db "$pg_tenants_db" -out "$work/pg-tenants.json"
	stop_platform
	files+=("$work/pg-tenants.json")
	rm -rf "$work/pg-tenants"
fi

# ---- 3. rebuild: a seeded log replayed by the real binary ----
# platformbench seed writes BENCH_REBUILD_EVENTS events (default 300,000;
# 100,000 with --quick; 10000000 for the auditor-scale goal) through an
# in-process node's own command handlers, then platformbench rebuild starts
# the platform on it, rebuilds every read model (events/s, CPU per event),
# kills it with SIGKILL and times /readyz, and reports resident memory per
# user. With Postgres (as above, unless BENCH_SKIP_PG=1) the same runs on
# the Postgres event store and read models with BENCH_REBUILD_PG_EVENTS
# (default 200,000). BENCH_SKIP_REBUILD=1 leaves this part out.
if [ "${BENCH_SKIP_REBUILD:-0}" != "1" ]; then
	rebuild_events=${BENCH_REBUILD_EVENTS:-300000}
	rebuild_pg_events=${BENCH_REBUILD_PG_EVENTS:-200000}
	if [ -n "$quick" ]; then
		rebuild_events=${BENCH_REBUILD_EVENTS:-100000}
		rebuild_pg_events=${BENCH_REBUILD_PG_EVENTS:-50000}
	fi
	say "rebuild: seeding $rebuild_events events (embedded)"
	"$work/platformbench" seed -data "$work/rebuild/data" -events "$rebuild_events"
	"$work/platformbench" rebuild -platform "$work/platform" -data "$work/rebuild/data" -store embedded -out "$work/rebuild.json"
	files+=("$work/rebuild.json")
	rm -rf "$work/rebuild"
	if [ "${BENCH_SKIP_PG:-0}" != "1" ] && [ -n "$admin_url" ]; then
		db=bench_rebuild_$$
		psql -q "$admin_url" -c "CREATE DATABASE $db" >/dev/null
		dbs+=("$db")
		say "rebuild: seeding $rebuild_pg_events events (postgres)"
		"$work/platformbench" seed -data "$work/rebuild-pg/data" -eventstore-url "$(db_url $db)" -postgres-url "$(db_url $db)" -events "$rebuild_pg_events"
		PLATFORM_PORTAL_BASE_URL="http://127.0.0.1" "$work/platformbench" rebuild -platform "$work/platform" -data "$work/rebuild-pg/data" \
			-eventstore-url "$(db_url $db)" -postgres-url "$(db_url $db)" -store postgres -postgres-pid "${pg_pid:-0}" -out "$work/rebuild-pg.json"
		files+=("$work/rebuild-pg.json")
	fi
fi

# The run's line heads the table; with --json it goes to stderr, so stdout
# stays one JSON document.
head_fd=1
[ -z "$json" ] || head_fd=2
echo "# scripts/bench.sh $* — $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores" >&"$head_fd"
"$work/platformbench" table $json "${files[@]}"

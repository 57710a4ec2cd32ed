#!/usr/bin/env bash
# Installs each SDK exactly as its README says, into an empty project in a
# fresh temporary folder, and runs the README's quick start against a real
# platform: the README is the test. For each SDK named in
# PLATFORM_TEST_INSTALL_SDKS (default "go js python java"), it takes from
# sdk/<name>/README.md
#
#   - the shell block after <!-- install-check:install --> (the install
#     commands), run with bash in the empty project, with the README's
#     placeholders /path/to/partner-open-platform (a copy of the SDK folders,
#     so the checkout stays clean) and your-project (the empty project)
#     filled in;
#   - the code block after <!-- install-check:example --> (the quick start),
#     saved as the project's program and run with PLATFORM_URL, APP_ID,
#     APP_KEY and APP_SECRET set to a fresh sandbox app of the platform;
#
# and requires the program to print "registered <open_user_id> as u-1".
#
# The platform is $PLATFORM_BIN (scripts/test.sh builds it once for the SDK
# stage; built here when unset), on a free loopback port with a throwaway
# data folder. Package caches are throwaway too (Go module cache, npm cache,
# pip cache, Maven local repository), filled from the machine's caches where
# they have the packages (the Go module cache's download folder, ~/.m2) and
# otherwise from the registries; the Go build cache is the user's (it caches
# compiler output, not packages). Each step is bounded (PLATFORM_TEST_INSTALL_TIMEOUT
# seconds, default 480: a fresh cache fetches every package, and a busy
# machine took 232 s for Maven and over 240 s for npm). The SDKs run side
# by side; each one's output is
# printed whole when it ends, with the seconds it took.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
cd "$repo"
say() { printf 'sdk-install-check: %s\n' "$*"; }
sdks=${PLATFORM_TEST_INSTALL_SDKS:-go js python java}
bound=${PLATFORM_TEST_INSTALL_TIMEOUT:-480}

work=$(mktemp -d "${TMPDIR:-/tmp}/sdk-install-check.XXXXXX")
platform_pid=""
cleanup() {
	if [ -n "$platform_pid" ]; then
		kill "$platform_pid" 2>/dev/null || true
		wait "$platform_pid" 2>/dev/null || true
	fi
	chmod -R u+w "$work" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

# ---- the platform ----
bin=${PLATFORM_BIN:-}
if [ -z "$bin" ]; then
	say "building the platform (PLATFORM_BIN unset)"
	go build -o "$work/platform" ./cmd/platform
	bin="$work/platform"
fi
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
admin_token=$(python3 -c 'import secrets; print(secrets.token_hex(24))')
base="http://127.0.0.1:$port"
(
	# Only this platform's settings: none inherited from the caller.
	for v in $(env | sed -n 's/^\(PLATFORM_[A-Z0-9_]*\)=.*/\1/p'); do unset "$v"; done
	export PLATFORM_ADDR="127.0.0.1:$port" PLATFORM_DATA_DIR="$work/platform-data" PLATFORM_ADMIN_TOKEN="$admin_token"
	exec "$bin"
) >"$work/platform.log" 2>&1 &
platform_pid=$!
for _ in $(seq 1 200); do
	if curl -fsS "$base/readyz" >/dev/null 2>&1; then break; fi
	if ! kill -0 "$platform_pid" 2>/dev/null; then cat "$work/platform.log" >&2; say "the platform exited" >&2; exit 1; fi
	sleep 0.1
done
curl -fsS "$base/readyz" >/dev/null || { cat "$work/platform.log" >&2; say "the platform is not ready" >&2; exit 1; }

# new_app prints "app_id app_key app_secret" of a new sandbox app.
new_app() {
	curl -fsS -X POST "$base/admin/v1/apps" -H "Authorization: Bearer $admin_token" -H 'Content-Type: application/json' \
		-d "{\"name\":\"install-check-$1\",\"scopes\":[\"channel_users\",\"webhooks\"]}" |
		python3 -c 'import json,sys; d=json.load(sys.stdin)["data"]; print(d["app_id"], d["app_key"], d["app_secret"])'
}

# ---- the README's blocks ----
# block README NAME prints the fenced block that follows <!-- install-check:NAME -->.
block() {
	awk -v marker="<!-- install-check:$2 -->" '
		$0 == marker { found = 1; next }
		found && !inside && /^```/ { inside = 1; next }
		inside && /^```/ { exit }
		inside { print }
	' "$1"
}

# A copy of the SDK folders stands for the partner's checkout of the repository.
checkout="$work/checkout"
mkdir -p "$checkout/sdk"
for s in $sdks; do
	tar -C "$repo/sdk" --exclude=node_modules --exclude=dist --exclude=target --exclude=__pycache__ --exclude='*.egg-info' \
		-cf - "$s" | tar -C "$checkout/sdk" -xf -
done

# Throwaway caches, filled from the machine's where they can be.
machine_gomodcache=$(go env GOMODCACHE)
export GOMODCACHE="$work/cache/go" GOFLAGS=-modcacherw
if [ -d "$machine_gomodcache/cache/download" ]; then
	export GOPROXY="file://$machine_gomodcache/cache/download,https://proxy.golang.org"
fi
# npm: a copy of the machine's cache, preferred over the registry.
if [ -d "$HOME/.npm/_cacache" ]; then
	mkdir -p "$work/cache/npm" && cp -R "$HOME/.npm/_cacache" "$work/cache/npm/"
fi
export npm_config_cache="$work/cache/npm" npm_config_prefer_offline=true npm_config_audit=false npm_config_fund=false npm_config_update_notifier=false
export PIP_CACHE_DIR="$work/cache/pip" PIP_DISABLE_PIP_VERSION_CHECK=1
m2="$work/cache/m2"
mkdir -p "$m2"
cat >"$work/maven-settings.xml" <<EOF
<settings>
  <localRepository>$m2</localRepository>
  <profiles><profile><id>machine-cache</id>
    <repositories><repository><id>machine-cache</id><url>file://${HOME}/.m2/repository</url></repository></repositories>
    <pluginRepositories><pluginRepository><id>machine-cache</id><url>file://${HOME}/.m2/repository</url></pluginRepository></pluginRepositories>
  </profile></profiles>
  <activeProfiles><activeProfile>machine-cache</activeProfile></activeProfiles>
</settings>
EOF
# Maven reads MAVEN_ARGS (3.9+) and this alias for 3.8: the README's mvn
# commands run as written, with the throwaway repository.
mkdir -p "$work/bin"
real_mvn=$(command -v mvn || true)
if [ -n "$real_mvn" ]; then
	printf '#!/bin/sh\nexec %s -s %s "$@"\n' "$real_mvn" "$work/maven-settings.xml" >"$work/bin/mvn"
	chmod +x "$work/bin/mvn"
fi
export PATH="$work/bin:$PATH"

# java_project writes the empty Maven project: a pom.xml holding the
# README's dependency block, with the plugins pinned that compile and list
# the class path.
java_project() {
	local dep
	dep=$(block "$1" maven-dependency)
	[ -n "$dep" ] || { say "java: README.md has no install-check:maven-dependency block" >&2; return 1; }
	cat >"$2/pom.xml" <<EOF
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>example</groupId>
  <artifactId>install-check</artifactId>
  <version>1</version>
  <properties>
    <maven.compiler.source>1.8</maven.compiler.source>
    <maven.compiler.target>1.8</maven.compiler.target>
    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
  </properties>
  <dependencies>
$dep
  </dependencies>
  <build><plugins>
    <plugin><groupId>org.apache.maven.plugins</groupId><artifactId>maven-compiler-plugin</artifactId><version>3.13.0</version></plugin>
    <plugin><groupId>org.apache.maven.plugins</groupId><artifactId>maven-resources-plugin</artifactId><version>3.3.1</version></plugin>
    <plugin><groupId>org.apache.maven.plugins</groupId><artifactId>maven-dependency-plugin</artifactId><version>2.8</version></plugin>
  </plugins></build>
</project>
EOF
}

# ---- per SDK: install as the README says, run its quick start ----
run_sdk() {
	local s=$1 readme="$repo/sdk/$1/README.md" proj="$work/project-$1"
	mkdir -p "$proj"
	local install example
	install=$(block "$readme" install)
	example=$(block "$readme" example)
	if [ -z "$install" ] || [ -z "$example" ]; then
		say "$s: README.md has no install-check:install or install-check:example block" >&2
		return 1
	fi
	install=${install//\/path\/to\/partner-open-platform/$checkout}
	install=${install//your-project/$proj}
	# The empty project each ecosystem starts from.
	case $s in
	go) (cd "$proj" && go mod init example.com/install-check >/dev/null 2>&1) ;;
	js) (cd "$proj" && npm init -y >/dev/null) ;;
	python) python3 -m venv "$proj/.venv" ;;
	java) java_project "$readme" "$proj" ;;
	esac
	say "$s: install, as sdk/$s/README.md says:"
	printf '%s\n' "$install" | sed 's/^/    /'
	local env_path="$PATH"
	[ "$s" = python ] && env_path="$proj/.venv/bin:$PATH"
	local t0=$SECONDS
	if ! (cd "$proj" && PATH="$env_path" timeout "$bound" bash -euo pipefail -c "$install") >"$work/$s-install.log" 2>&1; then
		cat "$work/$s-install.log" >&2
		say "$s: the README's install commands failed" >&2
		return 1
	fi
	say "$s: installed in $((SECONDS - t0)) s"
	read -r app_id app_key app_secret < <(new_app "$s")
	local run
	case $s in
	go)
		printf '%s\n' "$example" >"$proj/main.go"
		run="go run ."
		;;
	js)
		printf '%s\n' "$example" >"$proj/quickstart.mjs"
		run="node quickstart.mjs"
		;;
	python)
		printf '%s\n' "$example" >"$proj/quickstart.py"
		run="python quickstart.py"
		;;
	java)
		local cls
		cls=$(printf '%s\n' "$example" | sed -n 's/^public class \([A-Za-z0-9_]*\).*/\1/p' | head -1)
		mkdir -p "$proj/src/main/java"
		printf '%s\n' "$example" >"$proj/src/main/java/$cls.java"
		run="mvn -B -q -Dstyle.color=never compile dependency:build-classpath -Dmdep.outputFile=cp.txt >&2 && java -cp target/classes:\$(cat cp.txt) $cls"
		;;
	esac
	local out
	if ! out=$(cd "$proj" && PATH="$env_path" PLATFORM_URL="$base" APP_ID="$app_id" APP_KEY="$app_key" APP_SECRET="$app_secret" \
		timeout "$bound" bash -euo pipefail -c "$run" 2>"$work/$s-run.err"); then
		cat "$work/$s-run.err" >&2
		say "$s: the README's quick start failed" >&2
		return 1
	fi
	if ! printf '%s\n' "$out" | grep -Eq '^registered [0-9]+ as u-1$'; then
		say "$s: the quick start printed '$out', want 'registered <open_user_id> as u-1'" >&2
		return 1
	fi
	say "$s: the quick start printed: $out"
}

# The SDKs install side by side (each its own project, toolchain and
# package cache, one app each on the one platform): their time is mostly
# the package managers' waiting. Each one's output is printed whole, in the
# order named, when it has ended.
failed=()
declare -A pids=()
for s in $sdks; do
	(
		start=$(date +%s)
		if run_sdk "$s"; then
			say "$s: OK in $(($(date +%s) - start)) s"
		else
			say "$s: FAILED after $(($(date +%s) - start)) s"
			exit 1
		fi
	) >"$work/$s.out" 2>&1 &
	pids[$s]=$!
done
for s in $sdks; do
	rc=0
	wait "${pids[$s]}" || rc=$?
	cat "$work/$s.out"
	if [ "$rc" -ne 0 ]; then
		failed+=("$s")
	fi
done
if [ "${#failed[@]}" -gt 0 ]; then
	say "FAILED: ${failed[*]}" >&2
	exit 1
fi

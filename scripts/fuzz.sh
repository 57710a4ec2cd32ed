#!/usr/bin/env bash
# Runs every fuzz target (func Fuzz… in a _test.go file) of the given
# packages (default ./...) for a short, bounded time each; scripts/test.sh
# calls it after go test.
#
#   scripts/fuzz.sh                                  # every package
#   scripts/fuzz.sh ./internal/auth ./webhooks/...   # some
#   PLATFORM_TEST_FUZZTIME=1m scripts/fuzz.sh ./internal/httpapi
#
# PLATFORM_TEST_FUZZTIME is the time per target (default 3s; a Go duration
# or a count such as 1000x; 0 runs nothing). PLATFORM_TEST_FUZZMINIMIZE is
# the time the engine may spend minimizing a new input (default 1s).
#
# Each package's test binary is built once, with go's fuzzing
# instrumentation (go test -c -fuzz), and runs its targets one after the
# other from the package's directory with go test's own flags and fuzz
# cache, as `go test -fuzz` would, without linking the binary again per
# target. A failure fails the script; the failing input is written under
# the package's testdata/fuzz/<target>/, where plain go test replays it.
#
# PLATFORM_TEST_FUZZ_BINDIR keeps the built binaries in that folder (made
# if missing, kept afterwards) and PLATFORM_TEST_FUZZ_BUILD_ONLY=1 only
# builds them: scripts/test.sh builds them beside go test, where the cores
# are idle, and runs the targets later from the same folder.
#
# PLATFORM_TEST_FUZZ_VET=off builds without go test's vet pass:
# scripts/test.sh sets it because its go test -vet=all checks the same
# packages with every analyzer.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'fuzz.sh: %s\n' "$*"; }

patterns=("$@")
[ "${#patterns[@]}" -gt 0 ] || patterns=(./...)
fuzztime=${PLATFORM_TEST_FUZZTIME:-3s}
# go's default spends up to 60 s minimizing each new interesting input,
# so a short run mostly minimized (84k executions in 60 s against 1.15M
# with 1s) and its stalled workers were what the retry below kept
# catching; a failing input is still written, only less small.
fuzzminimize=${PLATFORM_TEST_FUZZMINIMIZE:-1s}
if [ "$fuzztime" = "0" ] || [ "$fuzztime" = "0s" ]; then
	say "fuzzing skipped (PLATFORM_TEST_FUZZTIME=$fuzztime)"
	exit 0
fi

build_only=${PLATFORM_TEST_FUZZ_BUILD_ONLY:-0}
bindir=${PLATFORM_TEST_FUZZ_BINDIR:-}
if [ -n "$bindir" ]; then
	mkdir -p "$bindir"
else
	bindir=$(mktemp -d "${TMPDIR:-/tmp}/platform-fuzz.XXXXXX")
	trap 'rm -rf "$bindir"' EXIT
fi
gocache=$(go env GOCACHE)
vet_flag=()
if [ "${PLATFORM_TEST_FUZZ_VET:-on}" = "off" ]; then
	vet_flag=(-vet=off)
fi

mapfile -t pkgs < <(go list -f '{{.ImportPath}} {{.Dir}}{{range .TestGoFiles}} {{.}}{{end}}{{range .XTestGoFiles}} {{.}}{{end}}' "${patterns[@]}")
failed=()
count=0
for line in "${pkgs[@]}"; do
	read -r pkg dir files <<<"$line"
	[ -n "${files:-}" ] || continue
	# shellcheck disable=SC2086 # the file names are words
	mapfile -t targets < <(cd "$dir" && sed -n 's/^func \(Fuzz[A-Za-z0-9_]*\)(.*/\1/p' $files | sort -u)
	[ "${#targets[@]}" -gt 0 ] && [ -n "${targets[0]}" ] || continue
	bin="$bindir/${pkg//\//_}.test"
	# A binary in the folder was built by a build-only run of this tree.
	if [ ! -x "$bin" ]; then
		say "build $pkg (${#targets[@]} targets)"
		if ! go test -c -fuzz=. "${vet_flag[@]}" -o "$bin.tmp" "$pkg"; then
			failed+=("$pkg (build)")
			continue
		fi
		mv "$bin.tmp" "$bin"
	fi
	if [ "$build_only" = "1" ]; then
		continue
	fi
	for target in "${targets[@]}"; do
		count=$((count + 1))
		say "fuzz $pkg $target for $fuzztime"
		# On a loaded machine the fuzzing engine sometimes gives up on a
		# stalled worker at the deadline ("context deadline exceeded")
		# without having found or written any failing input: that is the
		# toolchain timing out, not a finding, so it is run again (twice
		# at most). A real finding writes testdata/fuzz/<target>/ and fails.
		attempt=1
		while :; do
			before=$(ls "$dir/testdata/fuzz/$target" 2>/dev/null | wc -l || true)
			if out=$(cd "$dir" && "$bin" -test.paniconexit0 -test.timeout=10m -test.run='^$' \
				-test.fuzz="^${target}\$" -test.fuzztime="$fuzztime" -test.fuzzminimizetime="$fuzzminimize" \
				-test.fuzzcachedir="$gocache/fuzz/$pkg" 2>&1); then
				printf '%s\n' "$out"
				break
			fi
			printf '%s\n' "$out"
			after=$(ls "$dir/testdata/fuzz/$target" 2>/dev/null | wc -l || true)
			if [ "$attempt" -lt 3 ] && [ "$before" = "$after" ] && grep -q 'context deadline exceeded' <<<"$out" && ! grep -q 'Failing input written' <<<"$out"; then
				say "fuzz $pkg $target: the engine timed out a stalled worker with no failing input; running it again"
				attempt=$((attempt + 1))
				continue
			fi
			failed+=("$pkg $target")
			break
		done
	done
done
if [ "${#failed[@]}" -gt 0 ]; then
	say "fuzzing failed (the failing input is under the package's testdata/fuzz/):" >&2
	printf '  %s\n' "${failed[@]}" >&2
	exit 1
fi
if [ "$build_only" = "1" ]; then
	say "fuzzing binaries built into $bindir"
else
	say "fuzzing: $count targets passed ($fuzztime each)"
fi

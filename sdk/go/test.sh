#!/usr/bin/env bash
# The Go SDK's whole suite: gofmt, go vet, go test -race (unit, OpenAPI
# drift, shared vectors, and the partner's day against a real platform
# started from $PLATFORM_BIN, built by the test when unset), then a short
# run of each fuzz target. Run from anywhere; scripts/test.sh runs it in
# its SDK stage. Modules come from the Go proxy into the usual module cache.
#
#   PLATFORM_BIN=...            platform binary (else the test builds ./cmd/platform)
#   PLATFORM_VECTORS=...        signatures.json (else ../shared/vectors beside the repo)
#   PLATFORM_TEST_FUZZTIME=5s   per fuzz target; 0 skips fuzzing
set -euo pipefail
cd "$(dirname "$0")"
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-mod=mod"

say() { printf '[sdk/go] %s\n' "$*"; }

say "gofmt"
unformatted=$(gofmt -l .)
if [ -n "$unformatted" ]; then
	echo "gofmt needed on:" >&2
	echo "$unformatted" >&2
	exit 1
fi

say "go vet"
go vet ./...

say "the package imports the standard library only"
deps=$(go list -deps -f '{{if not .Standard}}{{.ImportPath}}{{end}}' . | grep -v '^github.com/healthtech/partner-open-platform/sdk/go$' || true)
if [ -n "$deps" ]; then
	echo "non-standard dependencies of the SDK package: $deps" >&2
	exit 1
fi

say "go test -race"
go test -race -count=1 -timeout 300s ./...

fuzztime=${PLATFORM_TEST_FUZZTIME:-5s}
if [ "$fuzztime" != "0" ]; then
	for target in FuzzVerifyWebhook FuzzDecodeErrorEnvelope; do
		say "fuzz $target for $fuzztime"
		# As in scripts/test.sh: the fuzzing engine sometimes gives up on a
		# stalled worker at the deadline ("context deadline exceeded")
		# without finding or writing any failing input; that is the
		# toolchain timing out, not a finding, so it runs again (twice at
		# most). A real finding writes testdata/fuzz/<target>/ and fails.
		attempt=1
		while :; do
			before=$(ls "testdata/fuzz/$target" 2>/dev/null | wc -l || true)
			out=$(go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" . 2>&1) && { printf '%s\n' "$out"; break; }
			printf '%s\n' "$out"
			after=$(ls "testdata/fuzz/$target" 2>/dev/null | wc -l || true)
			if [ "$attempt" -lt 3 ] && [ "$before" = "$after" ] && grep -q 'context deadline exceeded' <<<"$out" && ! grep -q 'Failing input written' <<<"$out"; then
				say "fuzz $target: the engine timed out a stalled worker with no failing input; running it again"
				attempt=$((attempt + 1))
				continue
			fi
			exit 1
		done
	done
fi
say "ok"

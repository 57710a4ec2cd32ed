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
		go test -run '^$' -fuzz "^${target}\$" -fuzztime "$fuzztime" .
	done
fi
say "ok"

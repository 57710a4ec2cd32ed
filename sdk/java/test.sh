#!/usr/bin/env bash
# The Java SDK's whole suite, as scripts/test.sh runs it (PLATFORM_TEST_GO=0 PLATFORM_TEST_SDKS=java
# ./scripts/test.sh): unit tests (shared signature vectors from ../shared/vectors/signatures.json or
# $PLATFORM_VECTORS), the OpenAPI drift tests, and the integration test against $PLATFORM_BIN (built from
# ./cmd/platform into a temporary directory when unset). Maven artifacts come from Maven Central into the
# default ~/.m2 cache; build output goes to a throwaway copy, so the checkout stays clean.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)

command -v mvn >/dev/null || { echo "sdk/java/test.sh: mvn not found" >&2; exit 1; }
command -v javap >/dev/null || { echo "sdk/java/test.sh: a JDK (javap) is required" >&2; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/sdk-java-test.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

if [ -z "${PLATFORM_BIN:-}" ]; then
	echo "sdk/java/test.sh: building the platform (PLATFORM_BIN unset)"
	(cd "$repo" && go build -o "$tmp/platform" ./cmd/platform)
	export PLATFORM_BIN="$tmp/platform"
fi

# Build in a copy so target/ directories never land in the checkout; the tests find the repository through
# -Dpartneropen.repoRoot.
mkdir -p "$tmp/sdk"
cp -R "$here/pom.xml" "$here/core" "$here/server" "$tmp/sdk/"
rm -rf "$tmp/sdk/core/target" "$tmp/sdk/server/target"
# Maven 3.8 prints bare colour resets even in batch mode; strip escape sequences (pipefail keeps mvn's status).
(cd "$tmp/sdk" && mvn -B -q -Dstyle.color=never verify -Dpartneropen.repoRoot="$repo") 2>&1 |
	sed 's/\x1b\[[0-9;]*m//g'


# The published bytecode must be Java 8 (class file major version 52) for Java 8 JVMs and Android's D8.
for cls in "$tmp/sdk/core/target/classes/com/healthtech/partneropen/json/Json.class" \
	"$tmp/sdk/server/target/classes/com/healthtech/partneropen/server/PartnerClient.class"; do
	major=$(javap -v "$cls" | awk '/major version/ {print $3}')
	if [ "$major" != "52" ]; then
		echo "sdk/java/test.sh: $cls has class file major version $major, want 52 (Java 8)" >&2
		exit 1
	fi
done
echo "sdk/java/test.sh: ok (core and server, Java 8 bytecode)"

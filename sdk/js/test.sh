#!/usr/bin/env bash
# The JavaScript/TypeScript SDK's whole suite, as scripts/test.sh runs it
# (PLATFORM_BIN exported; without it the integration test builds the
# platform with go build):
#
#   1. npm ci from the committed package-lock.json (npm's own cache),
#   2. the generated models and operations match internal/openapi/openapi.yaml,
#   3. tsc builds the ESM and CommonJS outputs with declarations,
#   4. node --test: vectors (../shared/vectors/signatures.json or
#      PLATFORM_VECTORS), webhooks, client, drift, and the integration test
#      against a real platform child process,
#   5. npm pack, installed into a throwaway project: import and require
#      smoke tests, and a TypeScript consumer type-checked against both.
#
# Leaves nothing behind: dist/ and the pack directory are removed, and
# node_modules/ too unless it was there before.
set -euo pipefail
cd "$(dirname "$0")"

say() { printf 'sdk/js: %s\n' "$*"; }

had_modules=0
[ -d node_modules ] && had_modules=1
work=$(mktemp -d "${TMPDIR:-/tmp}/sdkjs-test.XXXXXX")
cleanup() {
	rm -rf "$work" dist
	if [ "$had_modules" -eq 0 ]; then rm -rf node_modules; fi
}
trap cleanup EXIT

node_major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$node_major" -lt 20 ]; then
	say "error: Node.js 20 or later is needed (found $(node --version))" >&2
	exit 1
fi

say "npm ci"
# --ignore-scripts: the prepare script would build here; the build step below does.
npm ci --no-audit --no-fund --loglevel=error --ignore-scripts

say "generated code is up to date with internal/openapi/openapi.yaml"
node scripts/generate.mjs --check

say "build (tsc: ESM + CommonJS + declarations)"
node scripts/build.mjs

say "node --test"
node --test --test-reporter=spec test/*.test.mjs

say "npm pack and install into a throwaway project"
npm pack --silent --pack-destination "$work" >/dev/null
tgz=$(ls "$work"/*.tgz)
mkdir -p "$work/consumer"
cp test/smoke/consumer.mjs test/smoke/consumer.cjs test/smoke/consumer.mts test/smoke/consumer.cts test/smoke/tsconfig.json "$work/consumer/"
(
	cd "$work/consumer"
	printf '{"name":"consumer","version":"1.0.0","private":true}\n' >package.json
	npm install --no-audit --no-fund --loglevel=error --offline "$tgz"
	node -e '
		const p = require("@healthtech/partner-open-platform/package.json");
		if (p.dependencies && Object.keys(p.dependencies).length) { console.error("runtime dependencies:", p.dependencies); process.exit(1); }
		if (p.engines.node !== ">=20") { console.error("engines.node", p.engines.node); process.exit(1); }
	'
	node consumer.mjs
	node consumer.cjs
)
say "TypeScript consumer (import and require declarations)"
node node_modules/typescript/bin/tsc -p "$work/consumer/tsconfig.json" --typeRoots "$PWD/node_modules/@types"
say "all passed"

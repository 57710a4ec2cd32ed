#!/usr/bin/env bash
# Lints internal/openapi/openapi.yaml with Redocly's recommended ruleset and
# Spectral's spectral:oas ruleset; any error or warning fails. The linters'
# versions are pinned in scripts/openapi-lint/package-lock.json, installed
# with `npm ci` into a cache folder keyed by that lock file (first run only),
# and their configuration, with each exemption and its reason, is in
# scripts/openapi-lint/ (redocly.yaml, .redocly.lint-ignore.yaml, .spectral.yaml).
set -euo pipefail
cd "$(dirname "$0")/.."
say() { printf 'lint-openapi: %s\n' "$*"; }

conf=scripts/openapi-lint
doc=internal/openapi/openapi.yaml
command -v npm >/dev/null 2>&1 || { say "error: npm (Node 20+) is needed" >&2; exit 1; }
lock_hash=$(sha256sum "$conf/package-lock.json" | cut -c1-16)
tools="${XDG_CACHE_HOME:-$HOME/.cache}/partner-open-platform/openapi-lint-$lock_hash"
if [ ! -x "$tools/node_modules/.bin/spectral" ] || [ ! -x "$tools/node_modules/.bin/redocly" ]; then
	say "installing the pinned linters into $tools (first run only)"
	work=$(mktemp -d "${TMPDIR:-/tmp}/openapi-lint.XXXXXX")
	cp "$conf/package.json" "$conf/package-lock.json" "$work/"
	(cd "$work" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
	mkdir -p "$(dirname "$tools")"
	rm -rf "$tools"
	mv "$work" "$tools"
fi
export REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true

status=0
# Redocly exits non-zero on errors only; warnings are counted from its JSON.
report=$(cd "$conf" && "$tools/node_modules/.bin/redocly" lint --config redocly.yaml --format=json "../../$doc" 2>/dev/null || true)
count=$(printf '%s' "$report" | node -e '
let s="";process.stdin.on("data",d=>s+=d).on("end",()=>{
  try { const r=JSON.parse(s); console.log(r.problems.filter(p=>!p.ignored).length); }
  catch (e) { console.log(-1); }
});')
if [ "$count" != "0" ]; then
	say "Redocly: $count problem(s) (or no report):" >&2
	(cd "$conf" && "$tools/node_modules/.bin/redocly" lint --config redocly.yaml "../../$doc") >&2 || true
	status=1
else
	say "Redocly (recommended): 0 errors, 0 warnings"
fi
if (cd "$conf" && "$tools/node_modules/.bin/spectral" lint --quiet --fail-severity=warn -r .spectral.yaml "../../$doc"); then
	say "Spectral (spectral:oas): 0 errors, 0 warnings"
else
	say "Spectral found problems (above)" >&2
	status=1
fi
exit "$status"

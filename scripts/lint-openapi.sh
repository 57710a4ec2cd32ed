#!/usr/bin/env bash
# Lints internal/openapi/openapi.yaml with Redocly's recommended ruleset and
# Spectral's spectral:oas ruleset; any error or warning fails. The linters'
# versions are pinned in scripts/openapi-lint/package-lock.json, installed
# with `npm ci` into a cache folder keyed by that lock file (first run only),
# and their configuration, with each exemption and its reason, is in
# scripts/openapi-lint/ (redocly.yaml, .redocly.lint-ignore.yaml, .spectral.yaml).
#
# Then, as independent tools read the document (scripts/openapi-py/, Python
# packages pinned in its requirements.txt, installed once into a venv under
# ~/.cache/partner-open-platform/ keyed by that file):
# - conformance.py validates every recorded real response strictly with
#   openapi-schema-validator (OAS 3.0): the responses the Go tests logged
#   into $PLATFORM_OPENAPI_TRAFFIC (scripts/test.sh sets it for its Go
#   side), plus those of internal/openapi's traffic test, run here;
# - client_check.py generates a client with openapi-python-client and makes
#   signed calls with it against a real embedded platform ($PLATFORM_BIN).
# PLATFORM_TEST_OPENAPI_PY=0 skips both (the linters still run).
# PLATFORM_OPENAPI_TRAFFIC_COMPLETE=1 says the folder already holds the
# traffic test's responses (scripts/test.sh sets it after a go test run that
# included ./internal/openapi), so the traffic test is not run again here.
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

if [ "${PLATFORM_TEST_OPENAPI_PY:-1}" != "0" ]; then
	py_conf=scripts/openapi-py
	req_hash=$(sha256sum "$py_conf/requirements.txt" | cut -c1-16)
	venv="${XDG_CACHE_HOME:-$HOME/.cache}/partner-open-platform/openapi-py-$req_hash"
	if [ ! -f "$venv/.installed" ]; then
		say "installing the pinned Python validator and client generator into $venv (first run only)"
		rm -rf "$venv"
		python3 -m venv "$venv"
		PIP_DISABLE_PIP_VERSION_CHECK=1 "$venv/bin/pip" install -q -r "$py_conf/requirements.txt"
		touch "$venv/.installed"
	fi
	traffic_own=""
	traffic="${PLATFORM_OPENAPI_TRAFFIC:-}"
	if [ -z "$traffic" ]; then
		traffic=$(mktemp -d "${TMPDIR:-/tmp}/openapi-traffic.XXXXXX")
		traffic_own=$traffic
	fi
	# The traffic test drives every operation through its outcomes; its
	# responses join whatever the Go side logged.
	if [ -z "$traffic_own" ] && [ "${PLATFORM_OPENAPI_TRAFFIC_COMPLETE:-}" = "1" ]; then
		say "the traffic test's responses are in $traffic already (the Go side ran ./internal/openapi)"
	elif ! out=$(PLATFORM_OPENAPI_TRAFFIC="$traffic" go test -count=1 -run '^TestHandlersAnswerAsDocumented$' ./internal/openapi 2>&1); then
		printf '%s\n' "$out" >&2
		say "the traffic test failed: go test -run TestHandlersAnswerAsDocumented ./internal/openapi" >&2
		status=1
	fi
	if ! "$venv/bin/python" "$py_conf/conformance.py" "$doc" "$traffic"; then
		status=1
	fi
	if [ -n "$traffic_own" ]; then rm -rf "$traffic_own"; fi
	if ! "$venv/bin/python" "$py_conf/client_check.py" .; then
		status=1
	fi
else
	say "independent validator and client generator skipped (PLATFORM_TEST_OPENAPI_PY=0)"
fi
exit "$status"

#!/usr/bin/env bash
# The developer portal's browser suite, as scripts/test.sh runs it (after the
# SDKs; PLATFORM_TEST_BROWSER=0 skips it there):
#
#   1. playwright-core, pinned in package-lock.json, installed with npm ci
#      into a cache folder keyed by the lock (first run only) and linked as
#      node_modules here (git-ignored);
#   2. node --test tests/*.test.mjs: each test starts a real embedded
#      platform ($PLATFORM_BIN, else built with go build) on a free loopback
#      port with loopback webhook targets allowed, a loopback webhook
#      receiver, and drives Debian's headless Chromium (/usr/bin/chromium,
#      or $PLATFORM_CHROMIUM) through the portal.
#
# Screenshots of every page visited go to $PLATFORM_SCREENSHOTS, default
# portal/e2e/screenshots/ (git-ignored), emptied at the start of each run.
# Chromium itself is installed by scripts/test.sh (apt-get chromium).
set -euo pipefail
cd "$(dirname "$0")"
say() { printf 'portal/e2e: %s\n' "$*"; }

chromium_bin=${PLATFORM_CHROMIUM:-/usr/bin/chromium}
[ -x "$chromium_bin" ] || { say "error: $chromium_bin not found (apt-get install chromium, or set PLATFORM_CHROMIUM)" >&2; exit 1; }
command -v npm >/dev/null 2>&1 || { say "error: npm (Node 20+) is needed" >&2; exit 1; }
node_major=$(node -p 'process.versions.node.split(".")[0]')
[ "$node_major" -ge 20 ] || { say "error: Node.js 20 or later is needed (found $(node --version))" >&2; exit 1; }

lock_hash=$(sha256sum package-lock.json | cut -c1-16)
tools="${XDG_CACHE_HOME:-$HOME/.cache}/partner-open-platform/portal-e2e-$lock_hash"
if [ ! -f "$tools/node_modules/playwright-core/package.json" ]; then
	say "installing the pinned playwright-core into $tools (first run only)"
	work=$(mktemp -d "${TMPDIR:-/tmp}/portal-e2e.XXXXXX")
	cp package.json package-lock.json "$work/"
	# No browser download: the tests use Debian's chromium.
	(cd "$work" && PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error >/dev/null)
	mkdir -p "$(dirname "$tools")"
	rm -rf "$tools"
	mv "$work" "$tools"
fi
if [ "$(readlink node_modules 2>/dev/null || true)" != "$tools/node_modules" ]; then
	if [ -e node_modules ] && [ ! -L node_modules ]; then
		say "error: portal/e2e/node_modules is a real folder; remove it (the suite links the cached install there)" >&2
		exit 1
	fi
	ln -sfn "$tools/node_modules" node_modules
fi

export PLATFORM_SCREENSHOTS="${PLATFORM_SCREENSHOTS:-$PWD/screenshots}"
rm -rf "$PLATFORM_SCREENSHOTS"
mkdir -p "$PLATFORM_SCREENSHOTS"
say "$("$chromium_bin" --version 2>/dev/null | head -n1), playwright-core $(node -p 'require("./node_modules/playwright-core/package.json").version')"
say "node --test (screenshots in $PLATFORM_SCREENSHOTS)"
# One test file at a time: each starts its own platform and browsers, and
# the machine is small.
node --test --test-concurrency=1 --test-reporter=spec tests/*.test.mjs
say "screenshots: $(find "$PLATFORM_SCREENSHOTS" -name '*.png' | wc -l) in $PLATFORM_SCREENSHOTS"
say "all passed"

#!/usr/bin/env bash
# The Python SDK's whole suite, as a partner would meet the package: build the
# wheel from a copy of this directory, install it (with the plugin extra) into
# a throwaway venv together with the test tools from PyPI, then run
# mypy --strict (the installed package and the tests) and pytest (vectors,
# client behaviour, OpenAPI drift, integration against $PLATFORM_BIN, which is
# built from ./cmd/platform when unset). Everything goes in one temp directory
# that is removed at the end; pip's download cache is the only thing kept.
#
# The interpreter is PLATFORM_TEST_PYTHON, else the oldest supported one
# (Python 3.9, from pyenv) when present, else python3.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
work="$(mktemp -d "${TMPDIR:-/tmp}/sdk-python.XXXXXX")"
trap 'rm -rf "$work"' EXIT

py="${PLATFORM_TEST_PYTHON:-}"
if [ -z "$py" ] && command -v pyenv >/dev/null 2>&1; then
	for c in "$(pyenv root)"/versions/3.9*/bin/python3; do
		if [ -x "$c" ]; then py="$c"; break; fi
	done
fi
py="${py:-python3}"
"$py" -c 'import sys; assert sys.version_info >= (3, 9), sys.version' 
echo "sdk/python: using $("$py" --version 2>&1) ($py)"

"$py" -m venv "$work/venv"
vpy="$work/venv/bin/python"
export PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONDONTWRITEBYTECODE=1
"$vpy" -m pip install -q build pytest mypy PyYAML types-PyYAML

# Build from a copy so the checkout gets no build/ or *.egg-info.
mkdir -p "$work/src"
cp -r "$here/pyproject.toml" "$here/README.md" "$here/src" "$work/src/"
"$vpy" -m build --wheel --outdir "$work/dist" "$work/src" >"$work/build.log" 2>&1 || { cat "$work/build.log"; exit 1; }
wheel=("$work"/dist/*.whl)
"$vpy" -m pip install -q "${wheel[0]}[plugin]"

if [ -z "${PLATFORM_BIN:-}" ]; then
	echo "sdk/python: building the platform (PLATFORM_BIN unset)"
	(cd "$repo" && go build -o "$work/platform" ./cmd/platform)
	export PLATFORM_BIN="$work/platform"
fi

cd "$here"
"$vpy" -m mypy --strict --cache-dir "$work/mypy" -p partner_open_platform
"$vpy" -m mypy --strict --cache-dir "$work/mypy" tests tools
PARTNER_SDK_EXPECT_INSTALLED=1 "$vpy" -m pytest -p no:cacheprovider -q tests "$@"

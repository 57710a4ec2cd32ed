#!/usr/bin/env bash
# Checks the operator's kit in deploy/ with the tools that read it:
# - promtool (from Debian's prometheus package, extracted without installing
#   into ~/.cache/partner-open-platform/promtool-<version>): `check rules` on
#   deploy/prometheus/alerts.yml and `test rules` on its unit tests
#   deploy/prometheus/alerts_test.yml (series under which each alert fires
#   and others under which it stays silent);
# - helm (pinned, built once from Helm's Go module into
#   ~/.cache/partner-open-platform/gotools/helm-<version>): `helm lint
#   --strict` and `helm template` of deploy/helm/partner-open-platform with
#   its default values and with every option on (ci/full-values.yaml), every
#   rendered object decoded strictly into its Kubernetes API type by
#   deploy/helm/kubecheck (its own Go module) and checked against what the
#   platform serves and reads; values the chart must refuse are refused.
# A tool that cannot be fetched is skipped with a message saying so; set
# PLATFORM_REQUIRE_DEPLOY_TOOLS=1 to fail instead. The Go tests of the same
# files (internal/opskit, cmd/platform's compose tests) run with the Go side.
#
#   bash scripts/lint-deploy.sh
set -euo pipefail
cd "$(dirname "$0")/.."
say() { printf 'lint-deploy: %s\n' "$*"; }
cache="${XDG_CACHE_HOME:-$HOME/.cache}/partner-open-platform"
helm_version=v3.19.0 # helm.sh/helm/v3
kube_version=1.33.0  # the Kubernetes version helm template renders for
chart=deploy/helm/partner-open-platform
skipped=()

skip() {
	if [ "${PLATFORM_REQUIRE_DEPLOY_TOOLS:-0}" = "1" ]; then
		say "error: $*" >&2
		exit 1
	fi
	say "SKIPPED: $*" >&2
	skipped+=("$1")
}

# promtool: the Debian package's binary, extracted once.
promtool_bin() {
	local found
	found=$(ls -d "$cache"/promtool-*/promtool 2>/dev/null | sort | tail -n1 || true)
	if [ -n "$found" ] && [ -x "$found" ]; then
		printf '%s\n' "$found"
		return 0
	fi
	command -v apt-get >/dev/null 2>&1 || return 1
	local work
	work=$(mktemp -d "${TMPDIR:-/tmp}/promtool.XXXXXX")
	if ! (cd "$work" && apt-get download prometheus >/dev/null 2>&1); then
		# The package lists may be missing or stale on a fresh machine.
		if [ "$(id -u)" -eq 0 ]; then apt-get update -qq >/dev/null 2>&1 || true; fi
		(cd "$work" && apt-get download prometheus >/dev/null 2>&1) || { rm -rf "$work"; return 1; }
	fi
	local deb version
	deb=$(ls "$work"/prometheus_*.deb)
	version=$(dpkg-deb -f "$deb" Version | tr -c 'A-Za-z0-9.+\n-' '_')
	dpkg-deb -x "$deb" "$work/x"
	mkdir -p "$cache/promtool-$version"
	cp "$work/x/usr/bin/promtool" "$cache/promtool-$version/promtool"
	rm -rf "$work"
	say "promtool from Debian's prometheus $version cached in $cache/promtool-$version" >&2
	printf '%s\n' "$cache/promtool-$version/promtool"
}

if pt=$(promtool_bin); then
	say "$("$pt" --version 2>&1 | head -n1)"
	"$pt" check rules deploy/prometheus/alerts.yml
	(cd deploy/prometheus && "$pt" test rules alerts_test.yml)
else
	skip promtool "Debian's prometheus package (promtool) could not be fetched with apt-get download"
fi

helm_bin() {
	local dir="$cache/gotools/helm-$helm_version"
	if [ ! -x "$dir/helm" ]; then
		say "installing helm.sh/helm/v3/cmd/helm@$helm_version into $dir (first run only)" >&2
		GOBIN="$dir" GOFLAGS= go install "helm.sh/helm/v3/cmd/helm@$helm_version" >&2 || return 1
	fi
	printf '%s\n' "$dir/helm"
}

kubecheck_bin() {
	local key dir
	key=$(cat deploy/helm/kubecheck/go.mod deploy/helm/kubecheck/go.sum deploy/helm/kubecheck/*.go | sha256sum | cut -c1-16)
	dir="$cache/kubecheck-$key"
	if [ ! -x "$dir/kubecheck" ]; then
		say "building deploy/helm/kubecheck into $dir (first run only)" >&2
		(cd deploy/helm/kubecheck && GOFLAGS= go build -o "$dir/kubecheck" .) >&2 || return 1
	fi
	printf '%s\n' "$dir/kubecheck"
}

if helm=$(helm_bin) && kc=$(kubecheck_bin); then
	say "$("$helm" version --short); kubecheck's own tests"
	(cd deploy/helm/kubecheck && GOFLAGS= go test -count=1 .)
	"$helm" lint --strict "$chart" --set secrets.existingSecret=platform-secrets
	"$helm" lint --strict "$chart" -f "$chart/ci/full-values.yaml"
	say "helm template | kubecheck (defaults)"
	"$helm" template pop "$chart" --kube-version "$kube_version" --set secrets.existingSecret=platform-secrets |
		"$kc" -settings docs/configuration.md -want Deployment,Service,ConfigMap,PodDisruptionBudget
	say "helm template | kubecheck (every option on)"
	"$helm" template pop "$chart" --kube-version "$kube_version" -f "$chart/ci/full-values.yaml" |
		"$kc" -settings docs/configuration.md -want Deployment,Service,ConfigMap,PodDisruptionBudget,HorizontalPodAutoscaler,ServiceMonitor
	# What the chart must refuse: no Secret named, a secret setting in the
	# ConfigMap, a setting that is not a string, the embedded log.
	refuse() {
		local why=$1
		shift
		if out=$("$helm" template pop "$chart" --kube-version "$kube_version" "$@" 2>&1); then
			say "error: the chart rendered with $why" >&2
			exit 1
		fi
		say "refused as it should: $why ($(printf '%s' "$out" | grep -o 'execution error.*' | head -n1 | cut -c1-160))"
	}
	refuse "no secrets.existingSecret"
	refuse "the master key in config" --set secrets.existingSecret=s --set config.PLATFORM_MASTER_KEY=x
	refuse "a number in config" --set secrets.existingSecret=s --set config.PLATFORM_LEASE_TTL=10
	refuse "no shared event store" --set secrets.existingSecret=s --set secrets.keys.PLATFORM_EVENTSTORE_URL=
else
	skip helm "helm $helm_version or deploy/helm/kubecheck could not be built from the Go module proxy"
fi

if [ "${#skipped[@]}" -gt 0 ]; then
	say "done; skipped: ${skipped[*]}"
else
	say "all passed"
fi

#!/usr/bin/env bash
# Regenerates core/src/main/java/com/healthtech/partneropen/model from internal/openapi/openapi.yaml.
# Compiles only the generator (with javac), so it works even when the checked-in models no longer compile.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
repo=$(cd "$here/../.." && pwd)
yaml_version=2.3
jar="$HOME/.m2/repository/org/yaml/snakeyaml/$yaml_version/snakeyaml-$yaml_version.jar"
if [ ! -f "$jar" ]; then
	mvn -B -q dependency:get -Dartifact="org.yaml:snakeyaml:$yaml_version"
fi
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
javac -d "$out" -cp "$jar" "$here/core/src/test/java/com/healthtech/partneropen/codegen/ModelGenerator.java"
java -Dpartneropen.repoRoot="$repo" -cp "$out:$jar" com.healthtech.partneropen.codegen.ModelGenerator

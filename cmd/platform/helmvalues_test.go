package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	yaml "github.com/oasdiff/yaml3"
)

// The Helm chart's default settings (its ConfigMap: values.yaml's config
// plus what the chart sets) and the variables it takes from the Secret are
// ones this binary reads, and the environment they make together is one it
// accepts, so a renamed or refused setting fails here and not in a pod.
func TestHelmValuesAreAcceptedSettings(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "deploy", "helm", "partner-open-platform", "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		Config  map[string]string `yaml:"config"`
		Secrets struct {
			Keys map[string]string `yaml:"keys"`
		} `yaml:"secrets"`
	}
	if err := yaml.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, s := range mustLoad(t, nil).settings {
		known[s.env] = true
	}
	// What templates/configmap.yaml and deployment.yaml set themselves.
	env := map[string]string{"PLATFORM_ADDR": "0.0.0.0:8080", "PLATFORM_DATA_DIR": "/data", "PLATFORM_LOG_FORMAT": "json", "PLATFORM_NODE_ID": "pop-partner-open-platform-7d9f8-abcde"}
	for k, val := range v.Config {
		if !known[k] {
			t.Errorf("values.yaml config sets %s, which the platform does not read", k)
		}
		if val != "" {
			env[k] = val
		}
	}
	secretValues := map[string]string{
		"PLATFORM_MASTER_KEY": strings.Repeat("ab", 32), "PLATFORM_ADMIN_TOKEN": "adm_helmTest", "PLATFORM_INTERNAL_TOKEN": "int_helmTest",
		"PLATFORM_EVENTSTORE_URL": "postgres://platform:pw@postgres:5432/platform?sslmode=require",
		"PLATFORM_POSTGRES_URL":   "postgres://platform:pw@postgres:5432/platform?sslmode=require",
	}
	for k, key := range v.Secrets.Keys {
		if !known[k] {
			t.Errorf("values.yaml secrets.keys names %s, which the platform does not read", k)
		}
		if key != "" {
			val, ok := secretValues[k]
			if !ok {
				t.Fatalf("no test value for %s", k)
			}
			env[k] = val
		}
	}
	c, err := loadConfig(nil, envOf(env), nil)
	if err != nil {
		t.Fatalf("the platform refuses the chart's default environment: %v", err)
	}
	if !strings.HasPrefix(c.EventStoreURL, "postgres://") || c.PostgresURL == "" || c.Addr != "0.0.0.0:8080" {
		t.Errorf("event store %q, read models %q, addr %q: want both on Postgres, listening on every interface", c.EventStoreURL, c.PostgresURL, c.Addr)
	}
}

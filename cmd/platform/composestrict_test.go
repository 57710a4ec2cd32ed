package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	yaml "github.com/oasdiff/yaml3"
)

// Docker Compose v1 (docker-compose 1.27.0 and later, the first to read
// version-less files) validates a file against its own schema and refuses
// keys it does not know, such as the top-level `name:` that only v2 reads.
// These types hold exactly the keys both v1 and v2 accept for what the files
// use, and the decoder refuses any other key, so a key one of them would
// reject fails here instead of on an operator's machine.

type strictService struct {
	Image       string            `yaml:"image"`
	Build       strictBuild       `yaml:"build"`
	Restart     string            `yaml:"restart"`
	Environment map[string]string `yaml:"environment"`
	Ports       []string          `yaml:"ports"`
	Volumes     []string          `yaml:"volumes"`
	DependsOn   map[string]struct {
		Condition string `yaml:"condition"`
	} `yaml:"depends_on"`
	Healthcheck struct {
		Test        []string `yaml:"test"`
		Interval    string   `yaml:"interval"`
		Timeout     string   `yaml:"timeout"`
		Retries     int      `yaml:"retries"`
		StartPeriod string   `yaml:"start_period"`
	} `yaml:"healthcheck"`
}

type strictBuild struct {
	Context    string `yaml:"context"`
	Dockerfile string `yaml:"dockerfile"`
}

// composeTopLevel is what both versions accept at the top; x- keys are
// extension fields (anchors for the shared parts).
var composeTopLevel = map[string]bool{"services": true, "volumes": true, "networks": true, "secrets": true, "configs": true}

func strictCompose(t *testing.T, name string) map[string]strictService {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", name))
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]yaml.Node
	if err := yaml.Unmarshal(raw, &top); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	for k := range top {
		if !composeTopLevel[k] && !strings.HasPrefix(k, "x-") {
			t.Errorf("%s: top-level key %q: Compose v1 refuses it (v1 and v2 both read only services, volumes, networks, secrets, configs and x- extensions)", name, k)
		}
	}
	// A generic decode resolves anchors and merge keys (<<: *anchor); each
	// service is then encoded again and decoded strictly.
	var doc struct {
		Services map[string]any `yaml:"services"`
	}
	if err := yaml.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	out := map[string]strictService{}
	for svc, n := range doc.Services {
		b, err := yaml.Marshal(n)
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		dec.KnownFields(true)
		var s strictService
		if err := dec.Decode(&s); err != nil {
			t.Errorf("%s: service %s: %v", name, svc, err)
			continue
		}
		for dep, d := range s.DependsOn {
			// service_completed_successfully needs docker-compose 1.29.
			if d.Condition != "service_started" && d.Condition != "service_healthy" {
				t.Errorf("%s: %s depends on %s with condition %q, which Compose v1 1.27 does not know", name, svc, dep, d.Condition)
			}
		}
		out[svc] = s
	}
	return out
}

func TestComposeFilesReadByV1AndV2(t *testing.T) {
	for _, name := range []string{"docker-compose.yml", "docker-compose.postgres.yml"} {
		t.Run(name, func(t *testing.T) {
			services := strictCompose(t, name)
			if len(services) == 0 {
				t.Fatal("no services")
			}
			for svc, s := range services {
				if s.Restart != "" && s.Restart != "unless-stopped" && s.Restart != "always" && s.Restart != "on-failure" && s.Restart != "no" {
					t.Errorf("%s: restart %q", svc, s.Restart)
				}
			}
		})
	}
}

// The broker the compose files run is the one the test suite runs
// (scripts/test.sh's kafka_version), and the docs name that version.
func TestComposeKafkaIsTheTestedVersion(t *testing.T) {
	script, err := os.ReadFile(filepath.Join("..", "..", "scripts", "test.sh"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^kafka_version=([0-9.]+)`).FindSubmatch(script)
	if m == nil {
		t.Fatal("scripts/test.sh sets no kafka_version")
	}
	want := string(m[1])
	for _, name := range []string{"docker-compose.yml", "docker-compose.postgres.yml"} {
		k, ok := strictCompose(t, name)["kafka"]
		if !ok {
			t.Errorf("%s: no kafka service", name)
			continue
		}
		if k.Image != "apache/kafka:"+want {
			t.Errorf("%s: Kafka image %s, want apache/kafka:%s (scripts/test.sh)", name, k.Image, want)
		}
	}
	ops, err := os.ReadFile(filepath.Join("..", "..", "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range regexp.MustCompile(`apache/kafka:([0-9.]+)|Kafka ([0-9]+\.[0-9]+)\b`).FindAllSubmatch(ops, -1) {
		got := string(v[1]) + string(v[2])
		if got != want && !strings.HasPrefix(want, got+".") {
			t.Errorf("docs/operations.md names Kafka %s, the compose files run %s", got, want)
		}
	}
}

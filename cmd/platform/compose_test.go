package main

import (
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	yaml "github.com/oasdiff/yaml3"

	"github.com/healthtech/partner-open-platform/events/esdb"
)

// No Docker engine runs where the tests run, so the compose files are
// checked by reading them: they parse, every service has a pinned image,
// references resolve, and every platform node's environment is exactly
// what this binary reads and accepts (loadConfig runs on it).

type composeFile struct {
	Name     string                    `yaml:"name"`
	Services map[string]composeService `yaml:"services"`
	Volumes  map[string]any            `yaml:"volumes"`
}

type composeService struct {
	Image       string                       `yaml:"image"`
	Build       any                          `yaml:"build"`
	Environment map[string]string            `yaml:"environment"`
	Ports       []string                     `yaml:"ports"`
	Volumes     []string                     `yaml:"volumes"`
	DependsOn   map[string]map[string]string `yaml:"depends_on"`
	Healthcheck struct {
		Test []string `yaml:"test"`
	} `yaml:"healthcheck"`
}

// composeVars stands in for the operator's shell when the files say
// ${VAR:?…}; ${VAR:-default} and ${VAR} take these or their defaults.
var composeVars = map[string]string{
	"PLATFORM_ADMIN_TOKEN": "adm_composeTest",
	"PLATFORM_MASTER_KEY":  strings.Repeat("ab", 32),
}

var composeRef = regexp.MustCompile(`\$\{([A-Z0-9_]+)(?::([-?])([^}]*))?\}`)

// interpolate substitutes variables the way docker compose does for the
// forms the files use.
func interpolate(t *testing.T, s string) string {
	return composeRef.ReplaceAllStringFunc(s, func(ref string) string {
		m := composeRef.FindStringSubmatch(ref)
		if v, ok := composeVars[m[1]]; ok && v != "" {
			return v
		}
		if m[2] == "?" {
			t.Errorf("%s is required by the compose file but not set in the test", m[1])
		}
		return m[3]
	})
}

func loadCompose(t *testing.T, name string) composeFile {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", name))
	if err != nil {
		t.Fatal(err)
	}
	var f composeFile
	if err := yaml.Unmarshal(raw, &f); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if len(f.Services) == 0 {
		t.Fatalf("%s: no services", name)
	}
	return f
}

// checkCompose holds for every compose file and returns its platform
// nodes' loaded configurations by service name.
func checkCompose(t *testing.T, name string) (composeFile, map[string]*config) {
	f := loadCompose(t, name)
	known := map[string]bool{}
	for _, s := range mustLoad(t, nil).settings {
		known[s.env] = true
	}
	hostPorts := map[string]string{}
	nodes := map[string]*config{}
	for svc, s := range f.Services {
		if s.Image == "" {
			t.Errorf("%s: service %s has no image", name, svc)
		}
		if tag := s.Image[strings.LastIndex(s.Image, ":")+1:]; s.Build == nil && (!strings.Contains(s.Image, ":") || tag == "latest") {
			t.Errorf("%s: service %s image %q has no pinned tag", name, svc, s.Image)
		}
		if len(s.Healthcheck.Test) == 0 {
			t.Errorf("%s: service %s has no healthcheck (depends_on waits for it)", name, svc)
		}
		for dep := range s.DependsOn {
			if _, ok := f.Services[dep]; !ok {
				t.Errorf("%s: %s depends on unknown service %s", name, svc, dep)
			}
		}
		for _, v := range s.Volumes {
			vol, _, _ := strings.Cut(v, ":")
			if _, ok := f.Volumes[vol]; !ok && !strings.HasPrefix(vol, ".") && !strings.HasPrefix(vol, "/") {
				t.Errorf("%s: %s mounts undeclared volume %s", name, svc, vol)
			}
		}
		for _, p := range s.Ports {
			host := p[:strings.LastIndex(p, ":")]
			if other, dup := hostPorts[host]; dup {
				t.Errorf("%s: host port %s used by %s and %s", name, host, other, svc)
			}
			hostPorts[host] = svc
		}
		if !strings.HasPrefix(svc, "platform") {
			continue
		}
		env := map[string]string{}
		for k, v := range s.Environment {
			if !known[k] {
				t.Errorf("%s: %s sets %s, which the platform does not read", name, svc, k)
			}
			env[k] = interpolate(t, v)
		}
		c, err := loadConfig(nil, envOf(env), nil)
		if err != nil {
			t.Errorf("%s: %s: the platform refuses this environment: %v", name, svc, err)
			continue
		}
		if c.esdbURL != "" {
			t.Errorf("%s: %s uses the deprecated PLATFORM_ESDB_URL", name, svc)
		}
		for _, u := range []string{c.EventStoreURL, c.PostgresURL} {
			if host := urlHost(u); host != "" {
				if _, ok := f.Services[host]; !ok {
					t.Errorf("%s: %s points at %s, which is no service", name, svc, host)
				}
			}
		}
		for _, b := range c.KafkaBrokers {
			if host, _, _ := net.SplitHostPort(b); f.Services[host].Image == "" {
				t.Errorf("%s: %s uses broker %s, which is no service", name, svc, b)
			}
		}
		nodes[svc] = c
	}
	if len(nodes) == 0 {
		t.Fatalf("%s: no platform service", name)
	}
	return f, nodes
}

// urlHost is the host of a scheme://user:pw@host:port/… URL.
func urlHost(u string) string {
	_, rest, ok := strings.Cut(u, "://")
	if !ok {
		return ""
	}
	if at := strings.LastIndex(rest, "@"); at >= 0 {
		rest = rest[at+1:]
	}
	end := strings.IndexAny(rest, ":/?")
	if end < 0 {
		return rest
	}
	return rest[:end]
}

func TestComposeEventStoreDB(t *testing.T) {
	f, nodes := checkCompose(t, "docker-compose.yml")
	es := f.Services["eventstore"]
	if !strings.Contains(es.Image, "kurrentdb") && !strings.Contains(es.Image, "eventstore") {
		t.Errorf("eventstore image %q is not EventStoreDB/KurrentDB", es.Image)
	}
	if es.Environment["KURRENTDB_INSECURE"] != "true" {
		t.Errorf("the platform connects with tls=false, so the server must run insecure: %v", es.Environment)
	}
	for svc, c := range nodes {
		if !strings.HasPrefix(c.EventStoreURL, "esdb://") {
			t.Errorf("%s: event store %q is not EventStoreDB", svc, c.EventStoreURL)
		}
		if _, err := esdb.ParseConnectionString(c.EventStoreURL); err != nil {
			t.Errorf("%s: %v", svc, err)
		}
		if c.PostgresURL == "" || len(c.KafkaBrokers) == 0 {
			t.Errorf("%s: read models or Kafka not configured", svc)
		}
	}
}

func TestComposePostgres(t *testing.T) {
	f, nodes := checkCompose(t, "docker-compose.postgres.yml")
	if len(nodes) != 2 {
		t.Fatalf("%d platform nodes, want 2", len(nodes))
	}
	for svc, s := range f.Services {
		if strings.Contains(s.Image, "kurrentdb") || strings.Contains(s.Image, "eventstore") {
			t.Errorf("service %s runs EventStoreDB in the Postgres-only deployment", svc)
		}
	}
	relays, keys := 0, map[string]bool{}
	for svc, c := range nodes {
		if !strings.HasPrefix(c.EventStoreURL, "postgres://") || c.PostgresURL == "" {
			t.Errorf("%s: event store %q, read models %q: want both in Postgres", svc, c.EventStoreURL, c.PostgresURL)
		}
		if len(c.KafkaBrokers) == 0 {
			t.Errorf("%s: no Kafka", svc)
		}
		if len(f.Services[svc].Ports) != 1 || !strings.HasSuffix(f.Services[svc].Ports[0], ":8080") || c.Addr != "0.0.0.0:8080" {
			t.Errorf("%s: ports %v, addr %s: want one host port to the node's 8080", svc, f.Services[svc].Ports, c.Addr)
		}
		if *c.KafkaRelay {
			relays++
		}
		keys[c.MasterKey+"|"+c.AdminToken+"|"+c.InternalToken] = true
	}
	if relays != 1 {
		t.Errorf("%d nodes run the relay, want 1", relays)
	}
	if len(keys) != 1 {
		t.Error("the nodes do not share the master key, operator token and internal token")
	}
	k := f.Services["kafka"].Environment
	if !strings.Contains(k["KAFKA_ADVERTISED_LISTENERS"], "EXTERNAL://localhost:9094") ||
		!strings.Contains(k["KAFKA_LISTENERS"], "EXTERNAL://:9094") ||
		!strings.Contains(k["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"], "EXTERNAL:PLAINTEXT") {
		t.Errorf("Kafka has no external listener at localhost:9094: %v", k)
	}
	if got := f.Services["kafka"].Ports; len(got) != 1 || !strings.HasSuffix(got[0], "9094:9094") {
		t.Errorf("Kafka ports %v, want the external listener published on 9094", got)
	}
	if k["KAFKA_PROCESS_ROLES"] != "broker,controller" {
		t.Errorf("Kafka is not a single KRaft node: %v", k["KAFKA_PROCESS_ROLES"])
	}
}

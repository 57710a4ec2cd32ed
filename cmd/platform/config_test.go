package main

import (
	"bytes"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/internal/node"
)

// envOf serves loadConfig's getenv from a map, so tests never see the
// environment the test binary runs in.
func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func mustLoad(t *testing.T, env map[string]string, args ...string) *config {
	t.Helper()
	c, err := loadConfig(args, withBaseURL(env, args), io.Discard)
	if err != nil {
		t.Fatalf("env %v args %v: %v", env, args, err)
	}
	return c
}

// withBaseURL is envOf(env), with the portal base URL a shared store
// requires when env or args name a store and no base URL.
func withBaseURL(env map[string]string, args []string) func(string) string {
	shared := strings.Contains(strings.Join(args, " "), "-url=")
	for _, k := range []string{"PLATFORM_POSTGRES_URL", "PLATFORM_EVENTSTORE_URL", "PLATFORM_ESDB_URL"} {
		shared = shared || env[k] != ""
	}
	if _, set := env["PLATFORM_PORTAL_BASE_URL"]; !shared || set {
		return envOf(env)
	}
	e := map[string]string{"PLATFORM_PORTAL_BASE_URL": "https://open.example.com"}
	for k, v := range env {
		e[k] = v
	}
	return envOf(e)
}

// acceptsOf returns the accepted-values text of a variable's setting.
func acceptsOf(t *testing.T, env string) (string, string) {
	t.Helper()
	for _, s := range mustLoad(t, nil).settings {
		if s.env == env {
			return s.accepts, s.flag
		}
	}
	t.Fatalf("no setting %s", env)
	return "", ""
}

const goodKey = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func TestDefaults(t *testing.T) {
	c := mustLoad(t, map[string]string{"PLATFORM_RATE_LIMIT": ""}) // empty counts as unset
	relay := true
	want := config{
		Addr: "127.0.0.1:8080", LogFormat: "text", AccessLogFlush: 100 * time.Millisecond, Tracing: map[string]string{},
		Config: node.Config{
			DataDir: "./data", Timezone: "Asia/Shanghai", KafkaTopic: "platform.events",
			KafkaInternalTopic: "platform.internal.events", KafkaRelay: &relay, PartnerRateLimit: 6000,
			LeaseTTL: 10 * time.Second, WebhookWorkers: 64, WebhookPerEndpoint: 16, WebhookIdleConnections: 1024, WebhookBreakerFailures: 5,
			WebhookCreateConcurrency: 64, WebhookBreakerCooldown: 30 * time.Second, SnapshotInterval: 5 * time.Minute, SnapshotEvents: 10000,
			ErasurePurgeInterval: time.Hour,
			ReportPullLimit:      60, VerifyCooldown: 10 * time.Second,
			Portal: node.PortalConfig{SessionIdle: 30 * time.Minute, SessionMax: 12 * time.Hour, LockoutFailures: 5,
				LockoutPeriod: 15 * time.Minute, AddressLimit: 20, MailFrom: "portal@localhost", BaseURL: "http://127.0.0.1:8080"},
		},
		portalBaseURLDefault: true,
	}
	c.settings = nil
	if !reflect.DeepEqual(*c, want) {
		t.Fatalf("defaults\n got %+v\nwant %+v", *c, want)
	}
}

// TestInvalidValuesStopStartUp: every variable that can be wrong is refused
// with a message naming it and its accepted values, by variable and by flag.
// TestErasurePurgeInterval: a duration sets the period, off turns the purge
// off, and a period outside 1m..24h is refused.
func TestErasurePurgeInterval(t *testing.T) {
	if c := mustLoad(t, map[string]string{"PLATFORM_ERASURE_PURGE_INTERVAL": "15m"}); c.ErasurePurgeInterval != 15*time.Minute {
		t.Errorf("15m gave %v", c.ErasurePurgeInterval)
	}
	if c := mustLoad(t, map[string]string{"PLATFORM_ERASURE_PURGE_INTERVAL": "off"}); c.ErasurePurgeInterval >= 0 {
		t.Errorf("off gave %v", c.ErasurePurgeInterval)
	}
	for _, bad := range []string{"10s", "48h", "soon"} {
		if _, err := loadConfig(nil, envOf(map[string]string{"PLATFORM_ERASURE_PURGE_INTERVAL": bad}), io.Discard); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// TestSnapshotInterval: a duration sets the period, off turns snapshots off.
func TestSnapshotInterval(t *testing.T) {
	if c := mustLoad(t, map[string]string{"PLATFORM_SNAPSHOT_INTERVAL": "90s"}); c.SnapshotInterval != 90*time.Second {
		t.Errorf("90s gave %v", c.SnapshotInterval)
	}
	if c := mustLoad(t, map[string]string{"PLATFORM_SNAPSHOT_INTERVAL": "off"}); c.SnapshotInterval >= 0 {
		t.Errorf("off gave %v, want negative (no snapshots)", c.SnapshotInterval)
	}
}

func TestInvalidValuesStopStartUp(t *testing.T) {
	bad := map[string][]string{
		"PLATFORM_ADDR":                       {"8080", "localhost", "127.0.0.1:http", "127.0.0.1:70000", "a b:80"},
		"PLATFORM_ESDB_URL":                   {"http://127.0.0.1:2113", "esdb://", "esdb://h:port"},
		"PLATFORM_POSTGRES_URL":               {"postgres://h:notaport/db", "postgres://h/db?sslmode=sometimes", "mysql://h/db"},
		"PLATFORM_EVENTSTORE_URL":             {"http://127.0.0.1:2113", "esdb://h:port", "postgres://h:notaport/db", "mysql://h/db", "host=db dbname=x"},
		"PLATFORM_TIMEZONE":                   {"Mars/Olympus", "+08:00"},
		"PLATFORM_KAFKA_BROKERS":              {"kafka", "kafka:9092,", "a:1,,b:2", "kafka:x", ":9092"},
		"PLATFORM_KAFKA_TOPIC":                {"events topic", "a/b", "..", strings.Repeat("t", 250)},
		"PLATFORM_KAFKA_INTERNAL_TOPIC":       {"events topic", "a/b", ".."},
		"PLATFORM_FEED_PSEUDONYM_KEY":         {"short", "abcd"},
		"PLATFORM_KAFKA_RELAY":                {"maybe", "2", "enabled", "y"},
		"PLATFORM_WEBHOOK_ALLOW_LOOPBACK":     {"maybe", "-1", "tru"},
		"PLATFORM_WEBHOOK_RETRY_SCHEDULE":     {"5", "1m,0s", "-1m", "1m,,2m", "1m,", "soon"},
		"PLATFORM_RATE_LIMIT":                 {"abc", "0", "1.5", "6000/min", "1e3"},
		"PLATFORM_WEBHOOK_WORKERS":            {"0", "-1", "4097", "many", "1.5"},
		"PLATFORM_WEBHOOK_PER_ENDPOINT":       {"0", "1025", "x"},
		"PLATFORM_WEBHOOK_IDLE_CONNECTIONS":   {"0", "-1", "1000001", "many"},
		"PLATFORM_WEBHOOK_BREAKER_FAILURES":   {"0", "1001", "five"},
		"PLATFORM_WEBHOOK_CREATE_CONCURRENCY": {"0", "4097", "x"},
		"PLATFORM_WEBHOOK_BREAKER_COOLDOWN":   {"30", "500ms", "2h", "-1s", "soon"},
		"PLATFORM_REPORT_PULL_LIMIT":          {"abc", "0", "-1", "1.5"},
		"PLATFORM_VERIFY_COOLDOWN":            {"abc", "-1s", "10"},
		"PLATFORM_DIRECTORY_STALENESS":        {"abc", "-1s", "1", "soon"},
		"PLATFORM_LOG_FORMAT":                 {"yaml", "logfmt"},
		"PLATFORM_ACCESS_LOG_FLUSH":           {"abc", "-1s", "100", "soon"},
		"PLATFORM_DEBUG_ADDR":                 {"0.0.0.0:6060", ":6060", "10.0.0.1:6060", "example.com:6060", "127.0.0.1", "127.0.0.1:99999"},
		"PLATFORM_NODE_ID":                    {"node 1", "a/b", strings.Repeat("n", 129)},
		"PLATFORM_LEASE_TTL":                  {"10", "0s", "500ms", "-5s", "11m", "soon"},
		"PLATFORM_SNAPSHOT_INTERVAL":          {"5", "1s", "-5m", "25h", "never", "OFF"},
		"PLATFORM_ERASURE_PURGE_INTERVAL":     {"5", "10s", "-5m", "25h", "never", "OFF"},
		"PLATFORM_SNAPSHOT_EVENTS":            {"0", "999", "-1", "100000001", "many", "off"},
		"PLATFORM_PORTAL_INSECURE_COOKIES":    {"maybe", "2"},
		"PLATFORM_PORTAL_SESSION_IDLE":        {"30", "10s", "25h", "soon"},
		"PLATFORM_PORTAL_SESSION_MAX":         {"12", "1m", "721h"},
		"PLATFORM_PORTAL_LOCKOUT_FAILURES":    {"0", "101", "five"},
		"PLATFORM_PORTAL_LOCKOUT_PERIOD":      {"15", "10s", "25h"},
		"PLATFORM_PORTAL_ADDRESS_LIMIT":       {"0", "10001", "x"},
		"PLATFORM_PORTAL_BASE_URL":            {"example.com", "ftp://example.com", "https://example.com/portal", "https://x.org?a=1"},
		"PLATFORM_SMTP_URL":                   {"mail.example.com", "smtps://mail.example.com", "smtp://"},
		"PLATFORM_MAIL_FROM":                  {"portal", "Portal <p@example.com>", "a@b@c"},
		"PLATFORM_MASTER_KEY":                 {"hunter2", goodKey[:62], goodKey + "00"},
		"PLATFORM_MASTER_KEY_PREVIOUS":        {"hunter2", goodKey + ",", goodKey + ",," + goodKey, goodKey + "," + goodKey[:62]},
		"OTEL_SDK_DISABLED":                   {"yes", "1", "maybe"},
		"OTEL_TRACES_EXPORTER":                {"zipkin", "jaeger", "otlp,console", "on"},
		"OTEL_EXPORTER_OTLP_ENDPOINT":         {"collector:4318", "grpc://collector:4317", "http://"},
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT":  {"collector:4318/v1/traces", "ftp://collector/v1/traces"},
		"OTEL_EXPORTER_OTLP_PROTOCOL":         {"http/json", "http", "GRPC"},
		"OTEL_RESOURCE_ATTRIBUTES":            {"prod", "a=1,,b=2", "=x"},
		"OTEL_TRACES_SAMPLER":                 {"sometimes", "jaeger_remote", "ALWAYS_ON"},
		"OTEL_TRACES_SAMPLER_ARG":             {"1.5", "-0.1", "half"},
	}
	// Only these take any non-empty value; a new variable needs a row above.
	free := map[string]bool{"PLATFORM_DATA_DIR": true, "PLATFORM_ADMIN_TOKEN": true, "PLATFORM_INTERNAL_TOKEN": true, "OTEL_SERVICE_NAME": true}
	for _, s := range mustLoad(t, nil).settings {
		if _, ok := bad[s.env]; !ok && !free[s.env] {
			t.Errorf("%s has no invalid values in this test", s.env)
		}
	}
	for env, values := range bad {
		accepts, flagName := acceptsOf(t, env)
		for _, v := range values {
			_, err := loadConfig(nil, envOf(map[string]string{env: v}), io.Discard)
			if err == nil {
				t.Errorf("%s=%q accepted", env, v)
				continue
			}
			msg := err.Error()
			if !strings.Contains(msg, env+"=") || !strings.Contains(msg, accepts) {
				t.Errorf("%s=%q: message %q does not name the variable and %q", env, v, msg, accepts)
			}
			if strings.HasPrefix(env, "PLATFORM_MASTER_KEY") && strings.Contains(msg, v) {
				t.Errorf("%s: message echoes the secret: %q", env, msg)
			}
			if flagName == "" {
				continue
			}
			_, err = loadConfig([]string{"-" + flagName + "=" + v}, envOf(nil), io.Discard)
			if err == nil {
				t.Errorf("-%s=%q accepted", flagName, v)
			} else if msg := err.Error(); !strings.Contains(msg, "-"+flagName+" ") || !strings.Contains(msg, accepts) {
				t.Errorf("-%s=%q: message %q does not name the flag and %q", flagName, v, msg, accepts)
			}
		}
	}
}

// TestTracingSettings: tracing is off unless the OTEL_* variables turn it
// on, the start-up line says which exporter, and an endpoint's
// credentials are never logged.
func TestTracingSettings(t *testing.T) {
	show := func(c *config, env string) string {
		for _, s := range c.settings {
			if s.env == env {
				return s.show()
			}
		}
		t.Fatalf("no setting %s", env)
		return ""
	}
	if got := show(mustLoad(t, nil), "OTEL_TRACES_EXPORTER"); got != "none (tracing off)" {
		t.Errorf("no OTEL_* set: exporter %q", got)
	}
	c := mustLoad(t, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://user:pw@collector:4318", "OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0.25"})
	if got := show(c, "OTEL_TRACES_EXPORTER"); got != "otlp" {
		t.Errorf("an endpoint alone: exporter %q, want otlp", got)
	}
	if got := show(c, "OTEL_EXPORTER_OTLP_ENDPOINT"); strings.Contains(got, "pw") || !strings.Contains(got, "collector:4318") {
		t.Errorf("endpoint shown as %q", got)
	}
	if got := show(mustLoad(t, map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}), "OTEL_TRACES_EXPORTER"); got != "none (tracing off)" {
		t.Errorf("exporter none with an endpoint: %q", got)
	}
	if got := show(mustLoad(t, map[string]string{"OTEL_SDK_DISABLED": "TRUE", "OTEL_TRACES_EXPORTER": "otlp"}), "OTEL_TRACES_EXPORTER"); got != "none (tracing off)" {
		t.Errorf("OTEL_SDK_DISABLED=TRUE with otlp: %q", got)
	}
}

func TestBooleanSpellings(t *testing.T) {
	spellings := map[string]bool{
		"1": true, "true": true, "TRUE": true, "True": true, "yes": true, "YES": true, "on": true, "On": true,
		"0": false, "false": false, "FALSE": false, "no": false, "No": false, "off": false, "OFF": false,
	}
	for v, want := range spellings {
		c := mustLoad(t, map[string]string{"PLATFORM_KAFKA_RELAY": v, "PLATFORM_WEBHOOK_ALLOW_LOOPBACK": v})
		if *c.KafkaRelay != want || c.WebhookAllowLoopback != want {
			t.Errorf("%q: relay %v, loopback %v; want %v", v, *c.KafkaRelay, c.WebhookAllowLoopback, want)
		}
		c = mustLoad(t, nil, "-kafka-relay="+v, "-webhook-allow-loopback="+v)
		if *c.KafkaRelay != want || c.WebhookAllowLoopback != want {
			t.Errorf("flags =%q: relay %v, loopback %v; want %v", v, *c.KafkaRelay, c.WebhookAllowLoopback, want)
		}
	}
	// A bare boolean flag means on, and beats the variable.
	c := mustLoad(t, map[string]string{"PLATFORM_WEBHOOK_ALLOW_LOOPBACK": "no"}, "-webhook-allow-loopback")
	if !c.WebhookAllowLoopback {
		t.Error("bare -webhook-allow-loopback did not turn it on")
	}
	if c := mustLoad(t, nil); c.WebhookAllowLoopback || !*c.KafkaRelay {
		t.Errorf("defaults: loopback %v relay %v", c.WebhookAllowLoopback, *c.KafkaRelay)
	}
}

func TestDurationsAndLists(t *testing.T) {
	c := mustLoad(t, map[string]string{
		"PLATFORM_WEBHOOK_RETRY_SCHEDULE": " 90s, 2h ,1m30s",
		"PLATFORM_KAFKA_BROKERS":          "kafka-1:9092, 10.0.0.2:9093,[::1]:9094",
	})
	if want := []time.Duration{90 * time.Second, 2 * time.Hour, 90 * time.Second}; !reflect.DeepEqual(c.WebhookSchedule, want) {
		t.Errorf("schedule %v, want %v", c.WebhookSchedule, want)
	}
	if want := []string{"kafka-1:9092", "10.0.0.2:9093", "[::1]:9094"}; !reflect.DeepEqual(c.KafkaBrokers, want) {
		t.Errorf("brokers %q, want %q", c.KafkaBrokers, want)
	}
	// Unset: the spec's schedule (nil) and no brokers.
	if c := mustLoad(t, nil); c.WebhookSchedule != nil || c.KafkaBrokers != nil {
		t.Errorf("unset: schedule %v brokers %v", c.WebhookSchedule, c.KafkaBrokers)
	}
}

func TestFlagsBeatVariablesAndEmptyFlagMeansDefault(t *testing.T) {
	env := map[string]string{"PLATFORM_RATE_LIMIT": "10", "PLATFORM_ADDR": "0.0.0.0:9000", "PLATFORM_ESDB_URL": "esdb://h:2113?tls=false", "PLATFORM_LOG_FORMAT": "JSON"}
	c := mustLoad(t, env, "-rate-limit", "-1", "-addr=", "-esdb-url=")
	if c.PartnerRateLimit != -1 || c.Addr != "127.0.0.1:8080" || c.EventStoreURL != "" || c.LogFormat != "json" {
		t.Errorf("got rate %d addr %q event store %q format %q", c.PartnerRateLimit, c.Addr, c.EventStoreURL, c.LogFormat)
	}
	if _, err := loadConfig([]string{"-no-such-flag"}, envOf(nil), io.Discard); err == nil || !strings.Contains(err.Error(), "-no-such-flag") {
		t.Errorf("unknown flag: %v", err)
	}
	if _, err := loadConfig([]string{"stray"}, envOf(nil), io.Discard); err == nil || !strings.Contains(err.Error(), "stray") {
		t.Errorf("stray argument: %v", err)
	}
	var usage bytes.Buffer
	if _, err := loadConfig([]string{"-help"}, envOf(nil), &usage); !errors.Is(err, errHelp) || !strings.Contains(usage.String(), "PLATFORM_RATE_LIMIT") {
		t.Errorf("-help: %v, usage %q", err, usage.String())
	}
}

// TestEventStoreURL: PLATFORM_EVENTSTORE_URL picks EventStoreDB or Postgres,
// PLATFORM_ESDB_URL keeps working alone, and both set stop the start.
func TestEventStoreURL(t *testing.T) {
	const es, pg = "esdb://h:2113?tls=false", "postgres://u:pw@db:5432/events?sslmode=disable"
	for _, tc := range []struct {
		env  map[string]string
		args []string
		want string
	}{
		{nil, nil, ""},
		{map[string]string{"PLATFORM_EVENTSTORE_URL": pg}, nil, pg},
		{map[string]string{"PLATFORM_EVENTSTORE_URL": es}, nil, es},
		{map[string]string{"PLATFORM_ESDB_URL": es}, nil, es},
		{nil, []string{"-eventstore-url=" + pg}, pg},
		// A flag clearing one of the two resolves the clash.
		{map[string]string{"PLATFORM_EVENTSTORE_URL": pg, "PLATFORM_ESDB_URL": es}, []string{"-esdb-url="}, pg},
	} {
		c := mustLoad(t, tc.env, tc.args...)
		if got := c.EventStoreURL; got != tc.want {
			t.Errorf("env %v args %v: event store %q, want %q", tc.env, tc.args, got, tc.want)
		}
		// The start-up line names the store the node opens, password redacted.
		var buf bytes.Buffer
		c.log(slog.New(slog.NewTextHandler(&buf, nil)))
		if line := buf.String(); strings.Contains(line, ":pw@") || (tc.want == "" && !strings.Contains(line, "embedded log")) ||
			(tc.want == pg && !strings.Contains(line, "db:5432/events")) {
			t.Errorf("env %v args %v: start-up line %s", tc.env, tc.args, line)
		}
	}
	for _, tc := range []struct {
		env  map[string]string
		args []string
	}{
		{map[string]string{"PLATFORM_EVENTSTORE_URL": pg, "PLATFORM_ESDB_URL": es}, nil},
		{map[string]string{"PLATFORM_ESDB_URL": es}, []string{"-eventstore-url=" + pg}},
		{map[string]string{"PLATFORM_ESDB_URL": es, "PLATFORM_EVENTSTORE_URL": pg, "PLATFORM_PORTAL_BASE_URL": "https://open.example.com"}, nil},
	} {
		_, err := loadConfig(tc.args, envOf(tc.env), io.Discard)
		if err == nil || !strings.Contains(err.Error(), "PLATFORM_EVENTSTORE_URL") || !strings.Contains(err.Error(), "PLATFORM_ESDB_URL") ||
			!strings.Contains(err.Error(), "both set") || strings.Contains(err.Error(), "pw") {
			t.Errorf("env %v args %v: %v, want a refusal naming both variables", tc.env, tc.args, err)
		}
	}
}

// TestEffectiveConfigLogHidesSecrets: the start-up line shows every
// variable, and no token, key or password in any spelling.
func TestEffectiveConfigLogHidesSecrets(t *testing.T) {
	oldKey := strings.Repeat("cd", 32)
	secretsIn := []string{"adm_Sup3rSecret", goodKey, oldKey, "int_0therSecret", "pgPa55word", "esdbPa55", "qPa55", "kvPa55"}
	for _, pg := range []string{
		"postgres://platform:pgPa55word@db:5432/platform?sslmode=disable",
		"postgresql://platform@db/platform?password=qPa55&sslmode=disable",
		"host=db user=platform password=kvPa55 dbname=platform",
		"host=db user=platform password='kvPa55' dbname=platform",
	} {
		env := map[string]string{
			"PLATFORM_ADMIN_TOKEN": "adm_Sup3rSecret", "PLATFORM_MASTER_KEY": goodKey, "PLATFORM_INTERNAL_TOKEN": "int_0therSecret",
			"PLATFORM_MASTER_KEY_PREVIOUS": oldKey + "," + goodKey,
			"PLATFORM_POSTGRES_URL":        pg, "PLATFORM_ESDB_URL": "esdb://admin:esdbPa55@eventstore:2113?tls=false",
			"PLATFORM_PORTAL_BASE_URL": "https://open.example.com",
		}
		c := mustLoad(t, env)
		for _, format := range []string{"text", "json"} {
			var buf bytes.Buffer
			var h slog.Handler = slog.NewTextHandler(&buf, nil)
			if format == "json" {
				h = slog.NewJSONHandler(&buf, nil)
			}
			c.log(slog.New(h))
			line := buf.String()
			for _, s := range secretsIn {
				if strings.Contains(line, s) {
					t.Errorf("%s log line for %q contains secret %q:\n%s", format, pg, s, line)
				}
			}
			for _, want := range []string{"PLATFORM_ADMIN_TOKEN", "set (redacted)", "eventstore:2113", "admin:" + redacted, "platform", "PLATFORM_RATE_LIMIT", "6000"} {
				if !strings.Contains(line, want) {
					t.Errorf("%s log line lacks %q:\n%s", format, want, line)
				}
			}
			if strings.Count(line, "\n") != 1 {
				t.Errorf("not one line:\n%s", line)
			}
		}
	}
}

func TestRedactURL(t *testing.T) {
	cases := map[string]string{
		"":                                  "",
		"postgres://u:p@h:5432/db":          "postgres://u:" + redacted + "@h:5432/db",
		"postgres://u@h/db?sslmode=disable": "postgres://u@h/db?sslmode=disable",
		"postgres://h/db?password=p&sslmode=require": "postgres://h/db?password=" + redacted + "&sslmode=require",
		"postgres://u:p%40ss@h/db":                   "postgres://u:" + redacted + "@h/db",
		"postgres://u:p@h:notaport/db":               "postgres://u:" + redacted + "@h:notaport/db",
		"host=h password=p user=u":                   "host=h password=" + redacted + " user=u",
		"host=h password='p q' user=u":               "host=h password=" + redacted + " user=u",
		"esdb://admin:changeit@a:2113,b:2113":        "esdb://admin:" + redacted + "@a:2113,b:2113",
	}
	for in, want := range cases {
		if got := redactURL(in); got != want {
			t.Errorf("redactURL(%q) = %q, want %q", in, got, want)
		}
	}
	// A parser's error that quotes the URL loses the password too.
	raw := "postgres://u:s3cr%65t@h:bad/db"
	if got := scrubURL(`parse "`+raw+`": invalid port; s3cret`, raw); strings.Contains(got, "s3cr") {
		t.Errorf("scrubURL left the password: %q", got)
	}
}

// TestBadVariableStopsTheBinary runs the real main: a bad value exits 2
// with the message on stderr, before anything is created.
func TestBadVariableStopsTheBinary(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "PLATFORM_TEST_RUN_MAIN=1", "PLATFORM_DATA_DIR="+dir, "PLATFORM_ADDR=127.0.0.1:0", "PLATFORM_KAFKA_RELAY=maybe")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("exit: %v; stderr:\n%s", err, stderr.String())
	}
	if msg := stderr.String(); !strings.Contains(msg, "PLATFORM_KAFKA_RELAY") || !strings.Contains(msg, "yes/no") {
		t.Errorf("stderr: %q", msg)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("the data directory was written to: %v", entries)
	}
}

// TestEventStoreDBConfig: the older PLATFORM_ESDB_URL still selects the
// store but the start-up line calls it deprecated, and a connection string
// preferring a non-leader node is refused before start (the adapter needs
// the leader's view; see events/esdb.ParseConnectionString).
func TestEventStoreDBConfig(t *testing.T) {
	c := mustLoad(t, map[string]string{"PLATFORM_ESDB_URL": "esdb://h:2113?tls=false"})
	if c.EventStoreURL != "esdb://h:2113?tls=false" {
		t.Fatalf("alias selects %q", c.EventStoreURL)
	}
	var buf bytes.Buffer
	c.log(slog.New(slog.NewTextHandler(&buf, nil)))
	if !strings.Contains(buf.String(), "deprecated: set PLATFORM_EVENTSTORE_URL instead") {
		t.Fatalf("no deprecation note in the start-up line:\n%s", buf.String())
	}
	buf.Reset()
	mustLoad(t, map[string]string{"PLATFORM_EVENTSTORE_URL": "esdb://h:2113?tls=false"}).log(slog.New(slog.NewTextHandler(&buf, nil)))
	if strings.Contains(buf.String(), "deprecated") {
		t.Fatalf("deprecation note without the old variable:\n%s", buf.String())
	}
	for _, v := range []string{"PLATFORM_EVENTSTORE_URL", "PLATFORM_ESDB_URL"} {
		_, err := loadConfig(nil, envOf(map[string]string{v: "esdb://h:2113?tls=false&nodePreference=follower"}), io.Discard)
		if err == nil || !strings.Contains(err.Error(), v) || !strings.Contains(err.Error(), "nodePreference") {
			t.Errorf("%s with a follower preference: %v, want a refusal naming the variable and nodePreference", v, err)
		}
	}
}

// A load test turns the report pull limit up and the verify-use cooldown
// off; the node must get "none" (negative), not its 10 s default for 0.
func TestLoadTestKnobs(t *testing.T) {
	c := mustLoad(t, map[string]string{"PLATFORM_REPORT_PULL_LIMIT": "1000000", "PLATFORM_VERIFY_COOLDOWN": "0s"})
	if c.ReportPullLimit != 1000000 || c.VerifyCooldown >= 0 {
		t.Fatalf("report limit %d, node cooldown %s", c.ReportPullLimit, c.VerifyCooldown)
	}
	c = mustLoad(t, map[string]string{"PLATFORM_VERIFY_COOLDOWN": "3s"})
	if c.VerifyCooldown != 3*time.Second {
		t.Fatalf("node cooldown %s, want 3s", c.VerifyCooldown)
	}
}

// TestPortalBaseURL: mail links never come from a request's Host, so the
// origin is configuration: required with a shared store, the listen
// address in embedded development, and said in the start-up line.
func TestPortalBaseURL(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{nil, "http://127.0.0.1:8080"},
		{map[string]string{"PLATFORM_ADDR": "0.0.0.0:9000"}, "http://127.0.0.1:9000"},
		{map[string]string{"PLATFORM_ADDR": ":9001"}, "http://127.0.0.1:9001"},
		{map[string]string{"PLATFORM_ADDR": "[::1]:9002"}, "http://127.0.0.1:9002"},
		{map[string]string{"PLATFORM_ADDR": "10.1.2.3:9003"}, "http://10.1.2.3:9003"},
		{map[string]string{"PLATFORM_PORTAL_BASE_URL": "https://open.example.com/"}, "https://open.example.com"},
		{map[string]string{"PLATFORM_POSTGRES_URL": "postgres://db/x", "PLATFORM_PORTAL_BASE_URL": "https://open.example.com"}, "https://open.example.com"},
	} {
		c, err := loadConfig(nil, envOf(tc.env), io.Discard)
		if err != nil {
			t.Fatalf("env %v: %v", tc.env, err)
		}
		if c.Portal.BaseURL != tc.want {
			t.Errorf("env %v: base URL %q, want %q", tc.env, c.Portal.BaseURL, tc.want)
		}
		var buf bytes.Buffer
		c.log(slog.New(slog.NewTextHandler(&buf, nil)))
		if !strings.Contains(buf.String(), tc.want) {
			t.Errorf("env %v: the start-up line does not say %s:\n%s", tc.env, tc.want, buf.String())
		}
		if def := tc.env["PLATFORM_PORTAL_BASE_URL"] == ""; def != strings.Contains(buf.String(), "embedded development default") {
			t.Errorf("env %v: start-up line on the default: %s", tc.env, buf.String())
		}
	}
	for _, env := range []map[string]string{
		{"PLATFORM_POSTGRES_URL": "postgres://db/x"},
		{"PLATFORM_EVENTSTORE_URL": "postgres://db/x"},
		{"PLATFORM_ESDB_URL": "esdb://h:2113?tls=false"},
	} {
		if _, err := loadConfig(nil, envOf(env), io.Discard); err == nil || !strings.Contains(err.Error(), "PLATFORM_PORTAL_BASE_URL") {
			t.Errorf("env %v without a base URL: %v, want a refusal naming PLATFORM_PORTAL_BASE_URL", env, err)
		}
	}
}

// Command platform runs the partner open platform. With no configuration it
// runs embedded (a durable log and in-memory read models in ./data); the
// PLATFORM_* variables switch each port to its production adapter.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/healthtech/partner-open-platform/internal/node"
)

func env(name, def string) string {
	if v, ok := os.LookupEnv(name); ok && v != "" {
		return v
	}
	return def
}

func main() {
	addr := flag.String("addr", env("PLATFORM_ADDR", "127.0.0.1:8080"), "listen address (PLATFORM_ADDR)")
	dataDir := flag.String("data-dir", env("PLATFORM_DATA_DIR", "./data"), "data directory (PLATFORM_DATA_DIR)")
	esdbURL := flag.String("esdb-url", env("PLATFORM_ESDB_URL", ""), "EventStoreDB connection string; empty = embedded log (PLATFORM_ESDB_URL)")
	pgURL := flag.String("postgres-url", env("PLATFORM_POSTGRES_URL", ""), "Postgres URL for read models; empty = in memory (PLATFORM_POSTGRES_URL)")
	tz := flag.String("timezone", env("PLATFORM_TIMEZONE", "Asia/Shanghai"), "zone of Y-m-d H:i:s times (PLATFORM_TIMEZONE)")
	kafka := flag.String("kafka-brokers", env("PLATFORM_KAFKA_BROKERS", ""), "comma-separated Kafka brokers; empty = the dispatcher reads the event store (PLATFORM_KAFKA_BROKERS)")
	kafkaTopic := flag.String("kafka-topic", env("PLATFORM_KAFKA_TOPIC", "platform.events"), "Kafka topic of the event feed (PLATFORM_KAFKA_TOPIC)")
	kafkaRelay := flag.Bool("kafka-relay", env("PLATFORM_KAFKA_RELAY", "1") == "1", "run the event-store-to-Kafka relay on this node (PLATFORM_KAFKA_RELAY=0 turns it off)")
	allowLoopback := flag.Bool("webhook-allow-loopback", os.Getenv("PLATFORM_WEBHOOK_ALLOW_LOOPBACK") == "1", "allow http and loopback webhook targets, for local development (PLATFORM_WEBHOOK_ALLOW_LOOPBACK=1)")
	schedule := flag.String("webhook-retry-schedule", env("PLATFORM_WEBHOOK_RETRY_SCHEDULE", ""), "comma-separated retry delays, e.g. 1m,5m,30m,2h,6h (the spec's default) (PLATFORM_WEBHOOK_RETRY_SCHEDULE)")
	rateLimit := flag.Int("rate-limit", atoi(env("PLATFORM_RATE_LIMIT", "6000")), "requests per minute per app on scheme M routes; negative = none (PLATFORM_RATE_LIMIT)")
	logFormat := flag.String("log-format", env("PLATFORM_LOG_FORMAT", "text"), "text or json (PLATFORM_LOG_FORMAT)")
	flag.Parse()

	var handler slog.Handler = slog.NewTextHandler(os.Stderr, nil)
	if *logFormat == "json" {
		handler = slog.NewJSONHandler(os.Stderr, nil)
	}
	log := slog.New(handler)
	slog.SetDefault(log)

	retry, err := parseSchedule(*schedule)
	if err != nil {
		log.Error("bad retry schedule", "err", err)
		os.Exit(2)
	}
	if err := run(log, *addr, node.Config{
		DataDir: *dataDir, ESDBURL: *esdbURL, PostgresURL: *pgURL, Timezone: *tz,
		AdminToken: os.Getenv("PLATFORM_ADMIN_TOKEN"), MasterKey: os.Getenv("PLATFORM_MASTER_KEY"), Logger: log,
		KafkaBrokers: splitList(*kafka), KafkaTopic: *kafkaTopic, KafkaRelay: kafkaRelay, WebhookAllowLoopback: *allowLoopback,
		WebhookSchedule: retry, InternalToken: os.Getenv("PLATFORM_INTERNAL_TOKEN"), PartnerRateLimit: *rateLimit,
	}); err != nil {
		log.Error("platform stopped", "err", err)
		os.Exit(1)
	}
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0
	}
	return n
}

// parseSchedule reads retry delays; empty keeps the spec's schedule.
func parseSchedule(s string) ([]time.Duration, error) {
	var out []time.Duration
	for _, part := range splitList(s) {
		d, err := time.ParseDuration(part)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("retry delay %q: must be a positive duration such as 90s or 2h", part)
		}
		out = append(out, d)
	}
	return out, nil
}

func splitList(s string) []string {
	var out []string
	for _, part := range strings.Split(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			out = append(out, part)
		}
	}
	return out
}

func run(log *slog.Logger, addr string, cfg node.Config) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	n, err := node.Open(ctx, cfg)
	if err != nil {
		return err
	}
	defer n.Close()
	srv := &http.Server{
		Addr: addr, Handler: n.Handler,
		ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: 30 * time.Second, IdleTimeout: 120 * time.Second,
		MaxHeaderBytes: 64 << 10,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	log.Info("platform listening", "addr", fmt.Sprintf("http://%s", addr), "data_dir", cfg.DataDir)
	select {
	case err := <-errc:
		if !errors.Is(err, http.ErrServerClosed) {
			return err
		}
	case <-ctx.Done():
	}
	log.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	return srv.Shutdown(shutdownCtx)
}

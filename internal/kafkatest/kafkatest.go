// Package kafkatest points tests at the real Kafka broker scripts/test.sh
// starts, so the Kafka code is proven against Apache Kafka and not only
// against the in-process fake; tests share the broker through unique topic
// and group names.
package kafkatest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/segmentio/kafka-go"
)

// EnvBrokers names the variable holding the broker addresses
// (host:port[,host:port...]); scripts/test.sh starts a broker and sets it.
const EnvBrokers = "PLATFORM_TEST_KAFKA_BROKERS"

// EnvRequire, set to 1, turns a missing broker into a failure instead of a
// skip, so a run of scripts/test.sh can never pass without the Kafka tests.
const EnvRequire = "PLATFORM_REQUIRE_KAFKA"

// Brokers returns the real broker's addresses; without one it skips t, or
// fails it when EnvRequire is 1.
func Brokers(t testing.TB) []string {
	t.Helper()
	var brokers []string
	for _, b := range strings.Split(os.Getenv(EnvBrokers), ",") {
		if b = strings.TrimSpace(b); b != "" {
			brokers = append(brokers, b)
		}
	}
	if len(brokers) == 0 {
		if os.Getenv(EnvRequire) == "1" {
			t.Fatalf("Kafka tests required (%s=1) but %s is not set; run scripts/test.sh", EnvRequire, EnvBrokers)
		}
		t.Skip("Kafka broker tests skipped: " + EnvBrokers + " is not set; run scripts/test.sh")
	}
	for _, b := range brokers {
		if _, _, err := net.SplitHostPort(b); err != nil {
			t.Fatalf("%s must be host:port[,host:port...], got %q", EnvBrokers, os.Getenv(EnvBrokers))
		}
	}
	return brokers
}

// Name returns base with a random suffix, a topic or group name no other
// test (or earlier run on a reused broker) has used.
func Name(t testing.TB, base string) string {
	t.Helper()
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatalf("kafkatest: random name: %v", err)
	}
	return base + "." + hex.EncodeToString(b[:])
}

// Topic creates a fresh topic named after base with the given partitions,
// waits until every partition has a leader, deletes it when t ends, and
// returns its name.
func Topic(t testing.TB, brokers []string, base string, partitions int) string {
	t.Helper()
	name := Name(t, base)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := withController(ctx, brokers[0], func(c *kafka.Conn) error {
		return c.CreateTopics(kafka.TopicConfig{Topic: name, NumPartitions: partitions, ReplicationFactor: 1})
	})
	if err != nil {
		t.Fatalf("kafkatest: create topic %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := withController(ctx, brokers[0], func(c *kafka.Conn) error { return c.DeleteTopics(name) }); err != nil {
			t.Logf("kafkatest: delete topic %s: %v", name, err)
		}
	})
	if err := WaitForLeaders(ctx, brokers[0], name, partitions); err != nil {
		t.Fatalf("kafkatest: %v", err)
	}
	return name
}

// WaitForLeaders polls the metadata until topic has the given partitions,
// each with a leader: a topic is not usable the moment it is created.
func WaitForLeaders(ctx context.Context, broker, topic string, partitions int) error {
	var last string
	for {
		conn, err := kafka.DialContext(ctx, "tcp", broker)
		if err == nil {
			var parts []kafka.Partition
			parts, err = conn.ReadPartitions(topic)
			conn.Close()
			if err == nil {
				led := 0
				for _, p := range parts {
					if p.Leader.Host != "" {
						led++
					}
				}
				if len(parts) == partitions && led == partitions {
					return nil
				}
				last = fmt.Sprintf("%d partitions, %d with a leader", len(parts), led)
			}
		}
		if err != nil {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("topic %s not ready (%s): %w", topic, last, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// withController runs f on a connection to the cluster's controller, found
// through broker.
func withController(ctx context.Context, broker string, f func(*kafka.Conn) error) error {
	conn, err := kafka.DialContext(ctx, "tcp", broker)
	if err != nil {
		return err
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	if err := conn.SetDeadline(deadline); err != nil {
		return err
	}
	ctrl, err := conn.Controller()
	if err != nil {
		return err
	}
	cc, err := kafka.DialContext(ctx, "tcp", net.JoinHostPort(ctrl.Host, strconv.Itoa(ctrl.Port)))
	if err != nil {
		return err
	}
	defer cc.Close()
	if err := cc.SetDeadline(deadline); err != nil {
		return err
	}
	return f(cc)
}

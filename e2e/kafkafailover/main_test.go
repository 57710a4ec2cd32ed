// Package kafkafailover holds the Kafka failover test: webhook creation
// after a kill -9 of the node holding its lease on the Kafka internal topic.
package kafkafailover

import (
	"os"
	"testing"

	"github.com/healthtech/partner-open-platform/e2e/internal/proc"
)

func TestMain(m *testing.M) { os.Exit(proc.Main(m)) }

// Package harness is what the end-to-end tests under e2e/ share: a node
// served over real HTTP with a client that validates every response against
// the OpenAPI document (Start, Platform, App), the partner's signing schemes
// implemented independently of the server, webhook receivers, operators,
// clusters of nodes on one Postgres, and the packages' TestMain (Main).
//
// Only tests import it. Each e2e package tests one area of the node (see
// docs/testing.md), so each runs well inside go test's per-package budget
// and can be run alone:
//
//	./scripts/test.sh ./e2e/webhooks/...
package harness

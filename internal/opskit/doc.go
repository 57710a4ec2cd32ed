// Package opskit checks the operator's kit in deploy/ against the platform
// it describes: every metric the Prometheus rules and the Grafana dashboard
// name is one a running node serves, every alert links to its runbook in
// docs/operations.md, and the backup procedures of docs/operations.md
// restore a node that serves the same reads and continues the log. Its code
// is all tests; this file only names the package.
package opskit

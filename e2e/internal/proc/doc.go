// Package proc runs whole platform processes for the end-to-end tests
// that need them (e2e/process, e2e/chaos, e2e/kafkafailover, e2e/upgrade):
// it builds cmd/platform once per test binary (Binary; a test package's
// TestMain is os.Exit(proc.Main(m))), starts, SIGKILLs and restarts nodes
// (Node) on one Postgres event store, Postgres read models and, when
// asked, the real Kafka broker (Start), spreads signed requests over them
// as a load balancer would (Client), and records every webhook attempt a
// partner's endpoint receives (HookReceiver).
package proc

// Package webhooks turns partner-visible events into signed webhook
// deliveries: it creates one delivery per event and app (idempotently, keyed
// by a delivery id derived from both), posts it with the spec's headers and
// signature, retries on the spec's schedule, and records every attempt as an
// event so retry state survives any crash.
package webhooks

// Package domain is the vocabulary both sides of the platform share: the
// domain errors the HTTP edges map to the spec's codes, the validation error,
// the field-presence type of requests, stream names, and the status and
// outcome words of deliveries. It sits below commands, projections, webhooks
// and the HTTP edges and imports none of them, so a read-side package can
// speak of a missing user without importing the write side.
package domain

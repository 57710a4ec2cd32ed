// Package commands is the write side: each command loads its aggregate from
// its stream, decides, and appends with the revision it loaded. Its words
// (errors, stream names, the field-presence type) live in package domain.
//
// Invariants (uniqueness, remaining quantities, state transitions) are
// decided only on streams. Three lookups consult a read model through ports
// declared here, and none of them decides an invariant:
//   - PhoneDirectory binds a plugin measurement to the app's user with the
//     host's phone: a convenience link, null when not found;
//   - ProviderDirectory.ProviderIDs finds which providers an app operates;
//     each candidate is then loaded from its own stream, whose state decides;
//   - ProviderDirectory.FulfillmentIssuer finds which app issued the card of
//     a fulfillment record, to authorise a rating; the rating itself is
//     decided on the card's stream (one rating per record).
//
// A stale answer can only make such a command wait (bounded) or refuse; it
// can never break an invariant.
package commands

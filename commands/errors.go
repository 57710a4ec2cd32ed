// Package commands is the write side: each command loads its aggregate from
// its stream, decides, and appends with the revision it loaded. Its words
// (errors, stream names, the field-presence type) live in package domain.
//
// Invariants (uniqueness, remaining quantities, state transitions) are
// decided only on streams. Three lookups consult a read model through ports
// declared here, and none of them decides an invariant:
//   - PhoneDirectory binds a plugin measurement to the app's user with the
//     host's phone: a convenience link, null when not found;
//   - ProviderDirectory.ProviderIDs finds which providers an app operates
//     (for Verify and IsChannelPartner); each candidate is then loaded from
//     its own stream, whose state decides;
//   - ProviderDirectory.FulfillmentIssuer finds which app issued the card of
//     a fulfillment record, to authorise a rating; the rating itself is
//     decided on the record's own stream (one rating per record).
//
// A stale answer can only make such a command wait (bounded) or refuse; it
// can never break an invariant.
//
// Every decision is a pure function (decideX: state built from the stream's
// events and a command carrying its ids, time, random material and sealed
// secrets → events or a domain error), tested Given/When/Then without a
// store; handlers load, check, gather ids, time and randomness (ids only
// once the checks pass, so most refusals allocate none; ids have gaps by
// design), decide, and append at the loaded revision. Directory answers (a
// record's issuer, a phone's user) come in with the command too, and an
// app's providers as states loaded from their own streams. Two steps are decided by the store's append rather than on loaded
// state: a card's creation (no-stream on card-<number>, the number's
// uniqueness) and a batch's retried steps (event ids derived from the batch).
package commands

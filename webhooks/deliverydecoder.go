package webhooks

import "github.com/healthtech/partner-open-platform/events"

// DeliveryDecoder returns the dispatcher's direct decoder of delivery
// events (see decodeDelivery) as a function, so the deliveries read-model
// family replays the delivery records of a start's tail without the
// registry's reflection; events of other types, and delivery events outside
// the direct readers' subset, are decoded by reg.
func DeliveryDecoder(reg *events.Registry) func(events.Recorded) (events.Envelope, error) {
	d := &Dispatcher{Registry: reg}
	return d.decodeDelivery
}

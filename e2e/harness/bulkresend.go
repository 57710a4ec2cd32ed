package harness

import (
	"context"
	"strings"

	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// BacklogDelivery is one of an app's deliveries as the log has it.
type BacklogDelivery struct {
	ID     string
	Erased bool
}

// AppDeliveries lists app's deliveries from the log.
func (p *Platform) AppDeliveries(appID int64) []BacklogDelivery {
	var out []BacklogDelivery
	p.EachDeliveryEvent(func(id string, env events.Envelope) {
		if c, ok := env.Payload.(*catalog.DeliveryCreated); ok && c.AppID == appID {
			out = append(out, BacklogDelivery{ID: id, Erased: c.Body == ""})
		}
	})
	return out
}

// EachDeliveryEvent decodes every delivery event of the log, decrypted.
func (p *Platform) EachDeliveryEvent(f func(id string, env events.Envelope)) {
	p.T.Helper()
	var pos events.Position
	for {
		recs, err := p.Node.Events.ReadAll(context.Background(), pos, 1000)
		if err != nil {
			p.T.Fatal(err)
		}
		if len(recs) == 0 {
			return
		}
		for _, r := range recs {
			if id, ok := strings.CutPrefix(r.Stream, "delivery-"); ok {
				env, err := p.Node.Registry.Decode(r)
				if err != nil {
					p.T.Fatal(err)
				}
				f(id, env)
			}
		}
		pos = recs[len(recs)-1].Position
	}
}

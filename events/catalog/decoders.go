package catalog

import (
	"github.com/healthtech/partner-open-platform/events"
	jc "github.com/healthtech/partner-open-platform/events/jsoncodec"
)

// The user and family-member events are the ones every member call writes
// and several followers decode (their reflection decode was the largest
// share of a member upsert's CPU); the delivery events
// are what the webhook sender reads back per attempt (a delivery's stream)
// and, with the idempotency and binding events, most of what a start after
// kill -9 decodes again (each write and each webhook leaves some). So they
// are read by direct decoders instead of encoding/json's reflection, on
// the one JSON reader of the code base (jsoncodec.Reader). Each reads the
// payload's keys exactly as its json tags spell them and leaves anything
// else (an unknown or differently cased key, a null where encoding/json
// would keep the zero value) to encoding/json through the registry, which
// FuzzDirectDecodeMatchesEncodingJSON checks.

// directDecoders maps each hot event type to its direct decoder.
var directDecoders = map[string]events.DirectDecoder{
	UserRegistered{}.EventType():          object(readUserRegistered),
	UserProfileUpdated{}.EventType():      object(readUserProfileUpdated),
	FamilyMemberCreated{}.EventType():     object(readFamilyMemberCreated),
	FamilyMemberUpdated{}.EventType():     object(readFamilyMemberUpdated),
	FamilyMemberDeleted{}.EventType():     object(readFamilyMemberDeleted),
	DeliveryCreated{}.EventType():         object(readDeliveryCreated),
	DeliveryAttempted{}.EventType():       object(readDeliveryAttempted),
	IdempotencyClaimed{}.EventType():      object(readIdempotencyClaimed),
	IdempotencyCompleted{}.EventType():    object(readIdempotencyCompleted),
	ChannelUserBound{}.EventType():        object(readChannelUserBound),
	DeliveryResendRequested{}.EventType(): object(readDeliveryResendRequested),
}

// object makes the direct decoder of payload type T from its member
// reader, so each decoder is only its switch over T's json keys and the
// allocation and whole-document check live here once.
func object[T any, P interface {
	*T
	events.Payload
}](field func(p P, key string, r *jc.Reader) bool) events.DirectDecoder {
	return func(data []byte) (events.Payload, bool) {
		p := P(new(T))
		ok := jc.ReadObject(data, func(key string, r *jc.Reader) bool {
			return field(p, key, r)
		})
		return p, ok
	}
}

// registerDecoders installs the direct decoders; every type is in schemaOne.
func registerDecoders(r *events.Registry) {
	for name, d := range directDecoders {
		if err := r.RegisterDecoder(name, d); err != nil {
			panic(err)
		}
	}
}

func readUserRegistered(p *UserRegistered, key string, r *jc.Reader) bool {
	switch key {
	case "app_id":
		return r.Int(&p.AppID)
	case "profile":
		return readProfile(r, &p.Profile)
	case "registered_at":
		return r.Time(&p.RegisteredAt)
	case "binding":
		return r.String(&p.Binding)
	}
	return readUser(key, r, &p.ChannelUserID, &p.OpenUserID)
}

func readUserProfileUpdated(p *UserProfileUpdated, key string, r *jc.Reader) bool {
	switch key {
	case "changed":
		return r.Strings(&p.Changed)
	case "profile":
		return readProfile(r, &p.Profile)
	}
	return readUser(key, r, &p.ChannelUserID, &p.OpenUserID)
}

func readFamilyMemberCreated(p *FamilyMemberCreated, key string, r *jc.Reader) bool {
	if key == "member" {
		return readMember(r, &p.Member)
	}
	return readUser(key, r, &p.ChannelUserID, &p.OpenUserID)
}

func readFamilyMemberUpdated(p *FamilyMemberUpdated, key string, r *jc.Reader) bool {
	switch key {
	case "changed":
		return r.Strings(&p.Changed)
	case "member":
		return readMember(r, &p.Member)
	}
	return readUser(key, r, &p.ChannelUserID, &p.OpenUserID)
}

func readFamilyMemberDeleted(p *FamilyMemberDeleted, key string, r *jc.Reader) bool {
	switch key {
	case "member_id":
		return r.Int(&p.MemberID)
	case "app_user_id":
		return r.String(&p.AppUserID)
	case "family_group_id":
		return r.Int(&p.FamilyGroupID)
	}
	return readUser(key, r, &p.ChannelUserID, &p.OpenUserID)
}

// readUser reads the two members most user-stream events name their user
// with; any other key is unknown (false), so a decoder's own switch hands
// it the keys it does not read itself.
func readUser(key string, r *jc.Reader, channelUserID *string, openUserID *int64) bool {
	switch key {
	case "channel_user_id":
		return r.String(channelUserID)
	case "open_user_id":
		return r.Int(openUserID)
	}
	return false
}

func readProfile(r *jc.Reader, p *Profile) bool {
	return r.Object(func(key string, r *jc.Reader) bool {
		switch key {
		case "name":
			return r.String(&p.Name)
		case "nickname":
			return r.StringPtr(&p.Nickname)
		case "gender":
			return r.String(&p.Gender)
		case "avatar":
			return r.StringPtr(&p.Avatar)
		case "phone":
			return r.StringPtr(&p.Phone)
		case "email":
			return r.StringPtr(&p.Email)
		case "birth_date":
			return r.StringPtr(&p.BirthDate)
		}
		return false
	})
}

func readMember(r *jc.Reader, m *Member) bool {
	return r.Object(func(key string, r *jc.Reader) bool {
		switch key {
		case "member_id":
			return r.Int(&m.MemberID)
		case "app_user_id":
			return r.String(&m.AppUserID)
		case "app_group_id":
			return r.Int(&m.AppGroupID)
		case "family_group_id":
			return r.Int(&m.FamilyGroupID)
		case "name":
			return r.String(&m.Name)
		case "relationship":
			return r.String(&m.Relationship)
		case "gender":
			return r.StringPtr(&m.Gender)
		case "birth_date":
			return r.StringPtr(&m.BirthDate)
		case "phone":
			return r.StringPtr(&m.Phone)
		case "id_type":
			return r.StringPtr(&m.IDType)
		case "id_number":
			return r.StringPtr(&m.IDNumber)
		case "height":
			return r.IntPtr(&m.Height)
		case "weight":
			return r.IntPtr(&m.Weight)
		case "blood_type":
			return r.StringPtr(&m.BloodType)
		case "is_default":
			return r.Bool(&m.IsDefault)
		}
		return false
	})
}

func readDeliveryCreated(p *DeliveryCreated, key string, r *jc.Reader) bool {
	switch key {
	case "delivery_id":
		return r.String(&p.DeliveryID)
	case "app_id":
		return r.Int(&p.AppID)
	case "event":
		return r.String(&p.Event)
	case "source_event_id":
		return r.String(&p.SourceEventID)
	case "source_stream":
		return r.String(&p.SourceStream)
	case "source_position":
		return r.Object(func(key string, r *jc.Reader) bool {
			switch key {
			case "commit":
				return r.Uint(&p.SourcePosition.Commit)
			case "prepare":
				return r.Uint(&p.SourcePosition.Prepare)
			}
			return false
		})
	case "source_recorded_at":
		return r.Time(&p.SourceRecordedAt)
	case "body":
		return r.String(&p.Body)
	case "endpoint_id":
		return r.Int(&p.EndpointID)
	case "deliver":
		return r.Bool(&p.Deliver)
	case "dead_letter":
		return r.Bool(&p.DeadLetter)
	}
	return false
}

func readDeliveryAttempted(p *DeliveryAttempted, key string, r *jc.Reader) bool {
	switch key {
	case "delivery_id":
		return r.String(&p.DeliveryID)
	case "attempt":
		return r.IntTo(&p.Attempt)
	case "at":
		return r.Time(&p.At)
	case "url":
		return r.String(&p.URL)
	case "status_code":
		return r.IntTo(&p.StatusCode)
	case "latency_ms":
		return r.Int(&p.LatencyMS)
	case "error":
		return r.String(&p.Error)
	case "error_class":
		return r.String(&p.ErrorClass)
	case "outcome":
		return r.String(&p.Outcome)
	case "next_attempt_at":
		return r.TimePtr(&p.NextAttemptAt)
	case "response_excerpt":
		return r.String(&p.ResponseExcerpt)
	case "open_user_id":
		return r.Int(&p.OpenUserID)
	case "source_stream":
		return r.String(&p.SourceStream)
	}
	return false
}

func readIdempotencyClaimed(p *IdempotencyClaimed, key string, r *jc.Reader) bool {
	switch key {
	case "app_id":
		return r.Int(&p.AppID)
	case "method":
		return r.String(&p.Method)
	case "path":
		return r.String(&p.Path)
	case "body_sha256":
		return r.String(&p.BodySHA256)
	case "claimed_at":
		return r.Time(&p.ClaimedAt)
	}
	return false
}

func readIdempotencyCompleted(p *IdempotencyCompleted, key string, r *jc.Reader) bool {
	switch key {
	case "app_id":
		return r.Int(&p.AppID)
	case "status":
		return r.IntTo(&p.Status)
	case "content_type":
		return r.String(&p.ContentType)
	case "sealed_body":
		return r.String(&p.SealedBody)
	case "completed_at":
		return r.Time(&p.CompletedAt)
	}
	return false
}

func readChannelUserBound(p *ChannelUserBound, key string, r *jc.Reader) bool {
	switch key {
	case "app_id":
		return r.Int(&p.AppID)
	}
	return readUser(key, r, &p.ChannelUserID, &p.OpenUserID)
}

func readDeliveryResendRequested(p *DeliveryResendRequested, key string, r *jc.Reader) bool {
	switch key {
	case "delivery_id":
		return r.String(&p.DeliveryID)
	case "requested_by":
		return r.String(&p.RequestedBy)
	case "at":
		return r.Time(&p.At)
	}
	return false
}

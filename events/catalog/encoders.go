package catalog

import (
	"slices"

	"github.com/healthtech/partner-open-platform/events"
	jc "github.com/healthtech/partner-open-platform/events/jsoncodec"
)

// The events a register, a member upsert, a profile patch and a webhook's
// creation and attempts append are written by direct encoders instead of
// encoding/json's reflection (≈ 17.5 µs of a
// member upsert's CPU was json.Marshal in appendAfter, and the dispatcher
// encodes every new delivery the same way). Each writes its payload's
// fields in declaration order with the json tags' names, leaving out an
// omitempty field when zero, strings with encoding/json's HTML escaping
// and times as time.Time.MarshalJSON (events/jsoncodec), nil slices and
// pointers as null. A payload it cannot write exactly (a time MarshalJSON refuses) is declined and
// encoded by encoding/json through the registry;
// FuzzDirectEncodeMatchesEncodingJSON checks every type here byte for byte.

// directEncoders maps each hot event type to its direct encoder.
var directEncoders = map[string]events.DirectEncoder{
	UserRegistered{}.EventType():       encoder(writeUserRegistered),
	UserProfileUpdated{}.EventType():   encoder(writeUserProfileUpdated),
	FamilyGroupUpserted{}.EventType():  encoder(writeFamilyGroupUpserted),
	FamilyMemberCreated{}.EventType():  encoder(writeFamilyMemberCreated),
	FamilyMemberUpdated{}.EventType():  encoder(writeFamilyMemberUpdated),
	FamilyMemberDeleted{}.EventType():  encoder(writeFamilyMemberDeleted),
	ChannelUserBound{}.EventType():     encoder(writeChannelUserBound),
	DeliveryCreated{}.EventType():      encoder(writeDeliveryCreated),
	DeliveryAttempted{}.EventType():    encoder(writeDeliveryAttempted),
	IdempotencyClaimed{}.EventType():   encoder(writeIdempotencyClaimed),
	IdempotencyCompleted{}.EventType(): encoder(writeIdempotencyCompleted),
}

// encoder makes the direct encoder of payload type T (passed as a value,
// as commands do, or as a non-nil pointer) from its writer; the writer
// reports false for a value it cannot write exactly as encoding/json does.
func encoder[T any, P interface {
	*T
	events.Payload
}](write func(b []byte, p P) ([]byte, bool)) events.DirectEncoder {
	return func(b []byte, p events.Payload) ([]byte, bool) {
		switch v := p.(type) {
		case T:
			return write(b, &v)
		case P:
			if v != nil {
				return write(b, v)
			}
		}
		return b, false
	}
}

// registerEncoders installs the direct encoders; every type is in schemaOne.
func registerEncoders(r *events.Registry) {
	for name, e := range directEncoders {
		if err := r.RegisterEncoder(name, e); err != nil {
			panic(err)
		}
	}
}

// html writes strings as json.Marshal does (HTML escaped).
var html = jc.HTML

// size estimates an encoded payload's length from its variable-length
// strings, so the buffer is allocated once.
func size(fixed int, ss ...string) int {
	for _, s := range ss {
		fixed += len(s) + len(s)/8
	}
	return fixed
}

func writeUser(b []byte, channelUserID string, openUserID int64) []byte {
	b = html.String(b, `{"channel_user_id":`, channelUserID)
	return jc.Int(b, `,"open_user_id":`, openUserID)
}

func writeProfile(b []byte, p *Profile) []byte {
	b = html.String(b, `{"name":`, p.Name)
	b = html.OptString(b, `,"nickname":`, p.Nickname)
	b = html.String(b, `,"gender":`, p.Gender)
	b = html.OptString(b, `,"avatar":`, p.Avatar)
	b = html.OptString(b, `,"phone":`, p.Phone)
	b = html.OptString(b, `,"email":`, p.Email)
	b = html.OptString(b, `,"birth_date":`, p.BirthDate)
	return append(b, '}')
}

func writeMember(b []byte, m *Member) []byte {
	b = jc.Int(b, `{"member_id":`, m.MemberID)
	b = html.String(b, `,"app_user_id":`, m.AppUserID)
	b = jc.Int(b, `,"app_group_id":`, m.AppGroupID)
	b = jc.Int(b, `,"family_group_id":`, m.FamilyGroupID)
	b = html.String(b, `,"name":`, m.Name)
	b = html.String(b, `,"relationship":`, m.Relationship)
	b = html.OptString(b, `,"gender":`, m.Gender)
	b = html.OptString(b, `,"birth_date":`, m.BirthDate)
	b = html.OptString(b, `,"phone":`, m.Phone)
	b = html.OptString(b, `,"id_type":`, m.IDType)
	b = html.OptString(b, `,"id_number":`, m.IDNumber)
	b = jc.OptInt(b, `,"height":`, m.Height)
	b = jc.OptInt(b, `,"weight":`, m.Weight)
	b = html.OptString(b, `,"blood_type":`, m.BloodType)
	b = jc.Bool(b, `,"is_default":`, m.IsDefault)
	return append(b, '}')
}

func writeUserRegistered(b []byte, p *UserRegistered) ([]byte, bool) {
	b = slices.Grow(b, size(384, p.ChannelUserID, p.Profile.Name, p.Binding))
	b = jc.Int(b, `{"app_id":`, p.AppID)
	b = jc.Int(b, `,"open_user_id":`, p.OpenUserID)
	b = html.String(b, `,"channel_user_id":`, p.ChannelUserID)
	b = append(b, `,"profile":`...)
	b = writeProfile(b, &p.Profile)
	b, ok := jc.Time(b, `,"registered_at":`, p.RegisteredAt)
	if p.Binding != "" {
		b = html.String(b, `,"binding":`, p.Binding)
	}
	return append(b, '}'), ok
}

func writeUserProfileUpdated(b []byte, p *UserProfileUpdated) ([]byte, bool) {
	b = slices.Grow(b, size(384, p.ChannelUserID, p.Profile.Name))
	b = writeUser(b, p.ChannelUserID, p.OpenUserID)
	b = html.Strings(b, `,"changed":`, p.Changed)
	b = append(b, `,"profile":`...)
	b = writeProfile(b, &p.Profile)
	return append(b, '}'), true
}

func writeFamilyGroupUpserted(b []byte, p *FamilyGroupUpserted) ([]byte, bool) {
	b = slices.Grow(b, size(160, p.ChannelUserID, p.Name))
	b = writeUser(b, p.ChannelUserID, p.OpenUserID)
	b = jc.Int(b, `,"family_group_id":`, p.FamilyGroupID)
	b = jc.Int(b, `,"app_group_id":`, p.AppGroupID)
	b = html.String(b, `,"name":`, p.Name)
	b = jc.Bool(b, `,"created":`, p.Created)
	return append(b, '}'), true
}

func writeFamilyMemberCreated(b []byte, p *FamilyMemberCreated) ([]byte, bool) {
	b = slices.Grow(b, size(512, p.ChannelUserID, p.Member.AppUserID, p.Member.Name))
	b = writeUser(b, p.ChannelUserID, p.OpenUserID)
	b = append(b, `,"member":`...)
	b = writeMember(b, &p.Member)
	return append(b, '}'), true
}

func writeFamilyMemberUpdated(b []byte, p *FamilyMemberUpdated) ([]byte, bool) {
	b = slices.Grow(b, size(512, p.ChannelUserID, p.Member.AppUserID, p.Member.Name))
	b = writeUser(b, p.ChannelUserID, p.OpenUserID)
	b = html.Strings(b, `,"changed":`, p.Changed)
	b = append(b, `,"member":`...)
	b = writeMember(b, &p.Member)
	return append(b, '}'), true
}

func writeFamilyMemberDeleted(b []byte, p *FamilyMemberDeleted) ([]byte, bool) {
	b = slices.Grow(b, size(160, p.ChannelUserID, p.AppUserID))
	b = writeUser(b, p.ChannelUserID, p.OpenUserID)
	b = jc.Int(b, `,"member_id":`, p.MemberID)
	b = html.String(b, `,"app_user_id":`, p.AppUserID)
	b = jc.Int(b, `,"family_group_id":`, p.FamilyGroupID)
	return append(b, '}'), true
}

func writeChannelUserBound(b []byte, p *ChannelUserBound) ([]byte, bool) {
	b = slices.Grow(b, size(96, p.ChannelUserID))
	b = jc.Int(b, `{"app_id":`, p.AppID)
	b = html.String(b, `,"channel_user_id":`, p.ChannelUserID)
	b = jc.Int(b, `,"open_user_id":`, p.OpenUserID)
	return append(b, '}'), true
}

func writeDeliveryCreated(b []byte, p *DeliveryCreated) ([]byte, bool) {
	b = slices.Grow(b, size(320, p.DeliveryID, p.Event, p.SourceEventID, p.SourceStream, p.Body))
	b = html.String(b, `{"delivery_id":`, p.DeliveryID)
	b = jc.Int(b, `,"app_id":`, p.AppID)
	b = html.String(b, `,"event":`, p.Event)
	b = html.String(b, `,"source_event_id":`, p.SourceEventID)
	b = html.String(b, `,"source_stream":`, p.SourceStream)
	b = jc.Uint(b, `,"source_position":{"commit":`, p.SourcePosition.Commit)
	b = jc.Uint(b, `,"prepare":`, p.SourcePosition.Prepare)
	b, ok := jc.Time(b, `},"source_recorded_at":`, p.SourceRecordedAt)
	if !ok {
		return b, false
	}
	b = html.String(b, `,"body":`, p.Body)
	if p.EndpointID != 0 {
		b = jc.Int(b, `,"endpoint_id":`, p.EndpointID)
	}
	b = jc.Bool(b, `,"deliver":`, p.Deliver)
	b = jc.Bool(b, `,"dead_letter":`, p.DeadLetter)
	return append(b, '}'), true
}

// writeDeliveryAttempted writes a webhook attempt's outcome, which the
// sender appends after every POST (a reflection encode cost
// ≈ 5 µs per outcome).
func writeDeliveryAttempted(b []byte, p *DeliveryAttempted) ([]byte, bool) {
	var ok bool
	b = slices.Grow(b, size(256, p.DeliveryID, p.URL, p.Error, p.ResponseExcerpt, p.SourceStream))
	b = html.String(b, `{"delivery_id":`, p.DeliveryID)
	b = jc.Int(b, `,"attempt":`, int64(p.Attempt))
	if b, ok = jc.Time(b, `,"at":`, p.At); !ok {
		return b, false
	}
	b = html.String(b, `,"url":`, p.URL)
	if p.StatusCode != 0 {
		b = jc.Int(b, `,"status_code":`, int64(p.StatusCode))
	}
	b = jc.Int(b, `,"latency_ms":`, p.LatencyMS)
	if p.Error != "" {
		b = html.String(b, `,"error":`, p.Error)
	}
	if p.ErrorClass != "" {
		b = html.String(b, `,"error_class":`, p.ErrorClass)
	}
	b = html.String(b, `,"outcome":`, p.Outcome)
	if p.NextAttemptAt != nil {
		if b, ok = jc.Time(b, `,"next_attempt_at":`, *p.NextAttemptAt); !ok {
			return b, false
		}
	}
	if p.ResponseExcerpt != "" {
		b = html.String(b, `,"response_excerpt":`, p.ResponseExcerpt)
	}
	if p.OpenUserID != 0 {
		b = jc.Int(b, `,"open_user_id":`, p.OpenUserID)
	}
	if p.SourceStream != "" {
		b = html.String(b, `,"source_stream":`, p.SourceStream)
	}
	return append(b, '}'), true
}

func writeIdempotencyClaimed(b []byte, p *IdempotencyClaimed) ([]byte, bool) {
	b = slices.Grow(b, size(160, p.Method, p.Path, p.BodySHA256))
	b = jc.Int(b, `{"app_id":`, p.AppID)
	b = html.String(b, `,"method":`, p.Method)
	b = html.String(b, `,"path":`, p.Path)
	b = html.String(b, `,"body_sha256":`, p.BodySHA256)
	b, ok := jc.Time(b, `,"claimed_at":`, p.ClaimedAt)
	return append(b, '}'), ok
}

func writeIdempotencyCompleted(b []byte, p *IdempotencyCompleted) ([]byte, bool) {
	b = slices.Grow(b, size(160, p.ContentType, p.SealedBody))
	b = jc.Int(b, `{"app_id":`, p.AppID)
	b = jc.Int(b, `,"status":`, int64(p.Status))
	if p.ContentType != "" {
		b = html.String(b, `,"content_type":`, p.ContentType)
	}
	b = html.String(b, `,"sealed_body":`, p.SealedBody)
	b, ok := jc.Time(b, `,"completed_at":`, p.CompletedAt)
	return append(b, '}'), ok
}

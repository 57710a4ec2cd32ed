package catalog

import (
	"slices"
	"strconv"

	"github.com/healthtech/partner-open-platform/events"
)

// The events a register, a member upsert, a profile patch and a webhook's
// creation and attempts append are written by direct encoders instead of
// encoding/json's reflection (≈ 17.5 µs of a
// member upsert's CPU was json.Marshal in appendAfter, and the dispatcher
// encodes every new delivery the same way). Each writes its payload's
// fields in declaration order with the json tags' names, leaving out an
// omitempty field when zero, strings with encoding/json's HTML escaping
// (events.AppendJSONString), times as time.Time.MarshalJSON
// (events.AppendJSONTime), nil slices and pointers as null. A payload it
// cannot write exactly (a time MarshalJSON refuses) is declined and
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

// str appends a JSON string as encoding/json writes it (HTML escaped).
func str(b []byte, s string) []byte { return events.AppendJSONString(b, s, true) }

// num appends an integer.
func num(b []byte, n int64) []byte { return strconv.AppendInt(b, n, 10) }

// boolean appends true or false.
func boolean(b []byte, v bool) []byte {
	if v {
		return append(b, "true"...)
	}
	return append(b, "false"...)
}

// strPtr appends a *string: null when nil.
func strPtr(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return str(b, *s)
}

// numPtr appends a *int64: null when nil.
func numPtr(b []byte, n *int64) []byte {
	if n == nil {
		return append(b, "null"...)
	}
	return num(b, *n)
}

// size estimates an encoded payload's length from its variable-length
// strings, so the buffer is allocated once.
func size(fixed int, ss ...string) int {
	for _, s := range ss {
		fixed += len(s) + len(s)/8
	}
	return fixed
}

func writeUser(b []byte, channelUserID string, openUserID int64) []byte {
	b = append(b, `{"channel_user_id":`...)
	b = str(b, channelUserID)
	b = append(b, `,"open_user_id":`...)
	return num(b, openUserID)
}

func writeProfile(b []byte, p *Profile) []byte {
	b = append(b, `{"name":`...)
	b = str(b, p.Name)
	b = append(b, `,"nickname":`...)
	b = strPtr(b, p.Nickname)
	b = append(b, `,"gender":`...)
	b = str(b, p.Gender)
	b = append(b, `,"avatar":`...)
	b = strPtr(b, p.Avatar)
	b = append(b, `,"phone":`...)
	b = strPtr(b, p.Phone)
	b = append(b, `,"email":`...)
	b = strPtr(b, p.Email)
	b = append(b, `,"birth_date":`...)
	b = strPtr(b, p.BirthDate)
	return append(b, '}')
}

func writeMember(b []byte, m *Member) []byte {
	b = append(b, `{"member_id":`...)
	b = num(b, m.MemberID)
	b = append(b, `,"app_user_id":`...)
	b = str(b, m.AppUserID)
	b = append(b, `,"app_group_id":`...)
	b = num(b, m.AppGroupID)
	b = append(b, `,"family_group_id":`...)
	b = num(b, m.FamilyGroupID)
	b = append(b, `,"name":`...)
	b = str(b, m.Name)
	b = append(b, `,"relationship":`...)
	b = str(b, m.Relationship)
	b = append(b, `,"gender":`...)
	b = strPtr(b, m.Gender)
	b = append(b, `,"birth_date":`...)
	b = strPtr(b, m.BirthDate)
	b = append(b, `,"phone":`...)
	b = strPtr(b, m.Phone)
	b = append(b, `,"id_type":`...)
	b = strPtr(b, m.IDType)
	b = append(b, `,"id_number":`...)
	b = strPtr(b, m.IDNumber)
	b = append(b, `,"height":`...)
	b = numPtr(b, m.Height)
	b = append(b, `,"weight":`...)
	b = numPtr(b, m.Weight)
	b = append(b, `,"blood_type":`...)
	b = strPtr(b, m.BloodType)
	b = append(b, `,"is_default":`...)
	b = boolean(b, m.IsDefault)
	return append(b, '}')
}

func writeUserRegistered(b []byte, p *UserRegistered) ([]byte, bool) {
	b = slices.Grow(b, size(384, p.ChannelUserID, p.Profile.Name, p.Binding))
	b = append(b, `{"app_id":`...)
	b = num(b, p.AppID)
	b = append(b, `,"open_user_id":`...)
	b = num(b, p.OpenUserID)
	b = append(b, `,"channel_user_id":`...)
	b = str(b, p.ChannelUserID)
	b = append(b, `,"profile":`...)
	b = writeProfile(b, &p.Profile)
	b = append(b, `,"registered_at":`...)
	b, ok := events.AppendJSONTime(b, p.RegisteredAt)
	if p.Binding != "" {
		b = append(b, `,"binding":`...)
		b = str(b, p.Binding)
	}
	return append(b, '}'), ok
}

func writeUserProfileUpdated(b []byte, p *UserProfileUpdated) ([]byte, bool) {
	b = slices.Grow(b, size(384, p.ChannelUserID, p.Profile.Name))
	b = writeUser(b, p.ChannelUserID, p.OpenUserID)
	b = append(b, `,"changed":`...)
	b = events.AppendJSONStrings(b, p.Changed, true)
	b = append(b, `,"profile":`...)
	b = writeProfile(b, &p.Profile)
	return append(b, '}'), true
}

func writeFamilyGroupUpserted(b []byte, p *FamilyGroupUpserted) ([]byte, bool) {
	b = slices.Grow(b, size(160, p.ChannelUserID, p.Name))
	b = writeUser(b, p.ChannelUserID, p.OpenUserID)
	b = append(b, `,"family_group_id":`...)
	b = num(b, p.FamilyGroupID)
	b = append(b, `,"app_group_id":`...)
	b = num(b, p.AppGroupID)
	b = append(b, `,"name":`...)
	b = str(b, p.Name)
	b = append(b, `,"created":`...)
	b = boolean(b, p.Created)
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
	b = append(b, `,"changed":`...)
	b = events.AppendJSONStrings(b, p.Changed, true)
	b = append(b, `,"member":`...)
	b = writeMember(b, &p.Member)
	return append(b, '}'), true
}

func writeFamilyMemberDeleted(b []byte, p *FamilyMemberDeleted) ([]byte, bool) {
	b = slices.Grow(b, size(160, p.ChannelUserID, p.AppUserID))
	b = writeUser(b, p.ChannelUserID, p.OpenUserID)
	b = append(b, `,"member_id":`...)
	b = num(b, p.MemberID)
	b = append(b, `,"app_user_id":`...)
	b = str(b, p.AppUserID)
	b = append(b, `,"family_group_id":`...)
	b = num(b, p.FamilyGroupID)
	return append(b, '}'), true
}

func writeChannelUserBound(b []byte, p *ChannelUserBound) ([]byte, bool) {
	b = slices.Grow(b, size(96, p.ChannelUserID))
	b = append(b, `{"app_id":`...)
	b = num(b, p.AppID)
	b = append(b, `,"channel_user_id":`...)
	b = str(b, p.ChannelUserID)
	b = append(b, `,"open_user_id":`...)
	b = num(b, p.OpenUserID)
	return append(b, '}'), true
}

func writeDeliveryCreated(b []byte, p *DeliveryCreated) ([]byte, bool) {
	b = slices.Grow(b, size(320, p.DeliveryID, p.Event, p.SourceEventID, p.SourceStream, p.Body))
	b = append(b, `{"delivery_id":`...)
	b = str(b, p.DeliveryID)
	b = append(b, `,"app_id":`...)
	b = num(b, p.AppID)
	b = append(b, `,"event":`...)
	b = str(b, p.Event)
	b = append(b, `,"source_event_id":`...)
	b = str(b, p.SourceEventID)
	b = append(b, `,"source_stream":`...)
	b = str(b, p.SourceStream)
	b = append(b, `,"source_position":{"commit":`...)
	b = strconv.AppendUint(b, p.SourcePosition.Commit, 10)
	b = append(b, `,"prepare":`...)
	b = strconv.AppendUint(b, p.SourcePosition.Prepare, 10)
	b = append(b, `},"source_recorded_at":`...)
	b, ok := events.AppendJSONTime(b, p.SourceRecordedAt)
	if !ok {
		return b, false
	}
	b = append(b, `,"body":`...)
	b = str(b, p.Body)
	if p.EndpointID != 0 {
		b = append(b, `,"endpoint_id":`...)
		b = num(b, p.EndpointID)
	}
	b = append(b, `,"deliver":`...)
	b = boolean(b, p.Deliver)
	b = append(b, `,"dead_letter":`...)
	b = boolean(b, p.DeadLetter)
	return append(b, '}'), true
}

// writeDeliveryAttempted writes a webhook attempt's outcome, which the
// sender appends after every POST (a reflection encode cost
// ≈ 5 µs per outcome).
func writeDeliveryAttempted(b []byte, p *DeliveryAttempted) ([]byte, bool) {
	var ok bool
	b = slices.Grow(b, size(256, p.DeliveryID, p.URL, p.Error, p.ResponseExcerpt, p.SourceStream))
	b = append(b, `{"delivery_id":`...)
	b = str(b, p.DeliveryID)
	b = append(b, `,"attempt":`...)
	b = num(b, int64(p.Attempt))
	b = append(b, `,"at":`...)
	if b, ok = events.AppendJSONTime(b, p.At); !ok {
		return b, false
	}
	b = append(b, `,"url":`...)
	b = str(b, p.URL)
	if p.StatusCode != 0 {
		b = append(b, `,"status_code":`...)
		b = num(b, int64(p.StatusCode))
	}
	b = append(b, `,"latency_ms":`...)
	b = num(b, p.LatencyMS)
	if p.Error != "" {
		b = append(b, `,"error":`...)
		b = str(b, p.Error)
	}
	if p.ErrorClass != "" {
		b = append(b, `,"error_class":`...)
		b = str(b, p.ErrorClass)
	}
	b = append(b, `,"outcome":`...)
	b = str(b, p.Outcome)
	if p.NextAttemptAt != nil {
		b = append(b, `,"next_attempt_at":`...)
		if b, ok = events.AppendJSONTime(b, *p.NextAttemptAt); !ok {
			return b, false
		}
	}
	if p.ResponseExcerpt != "" {
		b = append(b, `,"response_excerpt":`...)
		b = str(b, p.ResponseExcerpt)
	}
	if p.OpenUserID != 0 {
		b = append(b, `,"open_user_id":`...)
		b = num(b, p.OpenUserID)
	}
	if p.SourceStream != "" {
		b = append(b, `,"source_stream":`...)
		b = str(b, p.SourceStream)
	}
	return append(b, '}'), true
}

func writeIdempotencyClaimed(b []byte, p *IdempotencyClaimed) ([]byte, bool) {
	b = slices.Grow(b, size(160, p.Method, p.Path, p.BodySHA256))
	b = append(b, `{"app_id":`...)
	b = num(b, p.AppID)
	b = append(b, `,"method":`...)
	b = str(b, p.Method)
	b = append(b, `,"path":`...)
	b = str(b, p.Path)
	b = append(b, `,"body_sha256":`...)
	b = str(b, p.BodySHA256)
	b = append(b, `,"claimed_at":`...)
	b, ok := events.AppendJSONTime(b, p.ClaimedAt)
	return append(b, '}'), ok
}

func writeIdempotencyCompleted(b []byte, p *IdempotencyCompleted) ([]byte, bool) {
	b = slices.Grow(b, size(160, p.ContentType, p.SealedBody))
	b = append(b, `{"app_id":`...)
	b = num(b, p.AppID)
	b = append(b, `,"status":`...)
	b = num(b, int64(p.Status))
	if p.ContentType != "" {
		b = append(b, `,"content_type":`...)
		b = str(b, p.ContentType)
	}
	b = append(b, `,"sealed_body":`...)
	b = str(b, p.SealedBody)
	b = append(b, `,"completed_at":`...)
	b, ok := events.AppendJSONTime(b, p.CompletedAt)
	return append(b, '}'), ok
}

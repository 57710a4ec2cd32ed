package catalog

import (
	"slices"
	"sync/atomic"

	"github.com/healthtech/partner-open-platform/events"
	jc "github.com/healthtech/partner-open-platform/events/jsoncodec"
)

// The events a register, a member upsert, a profile patch, a report's
// upload, an idempotent write and a webhook's delivery and attempts
// append, and that several followers and the webhook sender decode again
// (and every rebuild of the read models), are encoded and decoded
// without encoding/json's reflection (it was the largest share of a
// member upsert's CPU: ≈ 17.5 µs encoding in appendAfter, ≈ 66 µs
// decoding across followers, and the same per delivery in the
// dispatcher). Each type lists its fields once, in declaration order with
// its json tags' names, in a fields method that jsoncodec runs both ways;
// a value it cannot encode or data it cannot decode exactly as
// encoding/json does is declined and left to encoding/json by the
// registry (FuzzDirectEncodeMatchesEncodingJSON and
// FuzzDirectDecodeMatchesEncodingJSON check every type here). A field
// added to one of these types is one line in its fields method.

// directEncoders and directDecoders map each hot event type to its codec.
var directEncoders, directDecoders = func() (map[string]events.DirectEncoder, map[string]events.DirectDecoder) {
	enc, dec := map[string]events.DirectEncoder{}, map[string]events.DirectDecoder{}
	for _, c := range []struct {
		name string
		dec  events.DirectDecoder
	}{
		{UserRegistered{}.EventType(), decoder((*UserRegistered).fields)},
		{UserProfileUpdated{}.EventType(), decoder((*UserProfileUpdated).fields)},
		{FamilyGroupUpserted{}.EventType(), decoder((*FamilyGroupUpserted).fields)},
		{FamilyMemberCreated{}.EventType(), decoder((*FamilyMemberCreated).fields)},
		{FamilyMemberUpdated{}.EventType(), decoder((*FamilyMemberUpdated).fields)},
		{FamilyMemberDeleted{}.EventType(), decoder((*FamilyMemberDeleted).fields)},
		{ChannelUserBound{}.EventType(), decoder((*ChannelUserBound).fields)},
		{DeliveryCreated{}.EventType(), decoder((*DeliveryCreated).fields)},
		{DeliveryAttempted{}.EventType(), decoder((*DeliveryAttempted).fields)},
		{DeliveryResendRequested{}.EventType(), decoder((*DeliveryResendRequested).fields)},
		{IdempotencyClaimed{}.EventType(), decoder((*IdempotencyClaimed).fields)},
		{IdempotencyCompleted{}.EventType(), decoder((*IdempotencyCompleted).fields)},
		{ReportCreated{}.EventType(), decoder((*ReportCreated).fields)},
	} {
		enc[c.name], dec[c.name] = encoderOf(c.name), c.dec
	}
	return enc, dec
}()

// encoderOf makes the direct encoder of the event type name: its
// payload passed as a value, as commands do, or as a non-nil pointer. It
// starts with room for as many bytes as its last payload took, so a
// payload is mostly allocated once.
func encoderOf(name string) events.DirectEncoder {
	var last atomic.Int64
	return func(b []byte, p events.Payload) ([]byte, bool) {
		var f jc.Fields
		f.Write(slices.Grow(b, int(last.Load())))
		if !fieldsOf(p, &f) || p.EventType() != name {
			return b, false
		}
		out, ok := f.Written()
		if n := int64(len(out) - len(b)); n != last.Load() {
			last.Store(n)
		}
		return out, ok
	}
}

// fieldsOf runs p's fields method on f, false for a payload without a
// direct codec. A switch rather than a func value, so f and a payload
// passed by value stay on the encoder's stack.
func fieldsOf(p events.Payload, f *jc.Fields) bool {
	switch p := p.(type) {
	case UserRegistered:
		p.fields(f)
	case *UserRegistered:
		return p != nil && fieldsOf(*p, f)
	case UserProfileUpdated:
		p.fields(f)
	case *UserProfileUpdated:
		return p != nil && fieldsOf(*p, f)
	case FamilyGroupUpserted:
		p.fields(f)
	case *FamilyGroupUpserted:
		return p != nil && fieldsOf(*p, f)
	case FamilyMemberCreated:
		p.fields(f)
	case *FamilyMemberCreated:
		return p != nil && fieldsOf(*p, f)
	case FamilyMemberUpdated:
		p.fields(f)
	case *FamilyMemberUpdated:
		return p != nil && fieldsOf(*p, f)
	case FamilyMemberDeleted:
		p.fields(f)
	case *FamilyMemberDeleted:
		return p != nil && fieldsOf(*p, f)
	case ChannelUserBound:
		p.fields(f)
	case *ChannelUserBound:
		return p != nil && fieldsOf(*p, f)
	case DeliveryCreated:
		p.fields(f)
	case *DeliveryCreated:
		return p != nil && fieldsOf(*p, f)
	case DeliveryAttempted:
		p.fields(f)
	case *DeliveryAttempted:
		return p != nil && fieldsOf(*p, f)
	case DeliveryResendRequested:
		p.fields(f)
	case *DeliveryResendRequested:
		return p != nil && fieldsOf(*p, f)
	case IdempotencyClaimed:
		p.fields(f)
	case *IdempotencyClaimed:
		return p != nil && fieldsOf(*p, f)
	case IdempotencyCompleted:
		p.fields(f)
	case *IdempotencyCompleted:
		return p != nil && fieldsOf(*p, f)
	case ReportCreated:
		p.fields(f)
	case *ReportCreated:
		return p != nil && fieldsOf(*p, f)
	default:
		return false
	}
	return true
}

// decoder makes the direct decoder of payload type T from its fields
// method, returning a pointer as the registry does.
func decoder[T any, P interface {
	*T
	events.Payload
}](fields func(p P, f *jc.Fields)) events.DirectDecoder {
	return func(data []byte) (events.Payload, bool) {
		p := P(new(T))
		return p, jc.Decode(data, func(f *jc.Fields) { fields(p, f) })
	}
}

// registerCodecs installs the direct codecs; every type is in schemaOne.
func registerCodecs(r *events.Registry) {
	for name, e := range directEncoders {
		if err := r.RegisterEncoder(name, e); err != nil {
			panic(err)
		}
	}
	for name, d := range directDecoders {
		if err := r.RegisterDecoder(name, d); err != nil {
			panic(err)
		}
	}
}

func (p *Profile) fields(f *jc.Fields) {
	f.String("name", &p.Name)
	f.StringPtr("nickname", &p.Nickname)
	f.String("gender", &p.Gender)
	f.StringPtr("avatar", &p.Avatar)
	f.StringPtr("phone", &p.Phone)
	f.StringPtr("email", &p.Email)
	f.StringPtr("birth_date", &p.BirthDate)
}

func (m *Member) fields(f *jc.Fields) {
	f.Int("member_id", &m.MemberID)
	f.String("app_user_id", &m.AppUserID)
	f.Int("app_group_id", &m.AppGroupID)
	f.Int("family_group_id", &m.FamilyGroupID)
	f.String("name", &m.Name)
	f.String("relationship", &m.Relationship)
	f.StringPtr("gender", &m.Gender)
	f.StringPtr("birth_date", &m.BirthDate)
	f.StringPtr("phone", &m.Phone)
	f.StringPtr("id_type", &m.IDType)
	f.StringPtr("id_number", &m.IDNumber)
	f.IntPtr("height", &m.Height)
	f.IntPtr("weight", &m.Weight)
	f.StringPtr("blood_type", &m.BloodType)
	f.Bool("is_default", &m.IsDefault)
}

// user lists the two fields most user-stream events start with.
func user(f *jc.Fields, channelUserID *string, openUserID *int64) {
	f.String("channel_user_id", channelUserID)
	f.Int("open_user_id", openUserID)
}

func (p *UserRegistered) fields(f *jc.Fields) {
	f.Int("app_id", &p.AppID)
	f.Int("open_user_id", &p.OpenUserID)
	f.String("channel_user_id", &p.ChannelUserID)
	if f.Object("profile") {
		p.Profile.fields(f)
		f.End()
	}
	f.Time("registered_at", &p.RegisteredAt)
	f.OmitString("binding", &p.Binding)
}

func (p *UserProfileUpdated) fields(f *jc.Fields) {
	user(f, &p.ChannelUserID, &p.OpenUserID)
	f.Strings("changed", &p.Changed)
	if f.Object("profile") {
		p.Profile.fields(f)
		f.End()
	}
}

func (p *FamilyGroupUpserted) fields(f *jc.Fields) {
	user(f, &p.ChannelUserID, &p.OpenUserID)
	f.Int("family_group_id", &p.FamilyGroupID)
	f.Int("app_group_id", &p.AppGroupID)
	f.String("name", &p.Name)
	f.Bool("created", &p.Created)
}

func (p *FamilyMemberCreated) fields(f *jc.Fields) {
	user(f, &p.ChannelUserID, &p.OpenUserID)
	if f.Object("member") {
		p.Member.fields(f)
		f.End()
	}
}

func (p *FamilyMemberUpdated) fields(f *jc.Fields) {
	user(f, &p.ChannelUserID, &p.OpenUserID)
	f.Strings("changed", &p.Changed)
	if f.Object("member") {
		p.Member.fields(f)
		f.End()
	}
}

func (p *FamilyMemberDeleted) fields(f *jc.Fields) {
	user(f, &p.ChannelUserID, &p.OpenUserID)
	f.Int("member_id", &p.MemberID)
	f.String("app_user_id", &p.AppUserID)
	f.Int("family_group_id", &p.FamilyGroupID)
}

func (p *ChannelUserBound) fields(f *jc.Fields) {
	f.Int("app_id", &p.AppID)
	user(f, &p.ChannelUserID, &p.OpenUserID)
}

func (p *DeliveryCreated) fields(f *jc.Fields) {
	f.String("delivery_id", &p.DeliveryID)
	f.Int("app_id", &p.AppID)
	f.StringIn("event", &p.Event, webhookEvents)
	f.String("source_event_id", &p.SourceEventID)
	f.String("source_stream", &p.SourceStream)
	if f.Object("source_position") {
		f.Uint("commit", &p.SourcePosition.Commit)
		f.Uint("prepare", &p.SourcePosition.Prepare)
		f.End()
	}
	f.Time("source_recorded_at", &p.SourceRecordedAt)
	f.String("body", &p.Body)
	f.OmitInt("endpoint_id", &p.EndpointID)
	f.Bool("deliver", &p.Deliver)
	f.Bool("dead_letter", &p.DeadLetter)
}

func (p *DeliveryAttempted) fields(f *jc.Fields) {
	f.String("delivery_id", &p.DeliveryID)
	f.IntN("attempt", &p.Attempt)
	f.Time("at", &p.At)
	f.String("url", &p.URL)
	f.OmitIntN("status_code", &p.StatusCode)
	f.Int("latency_ms", &p.LatencyMS)
	f.OmitString("error", &p.Error)
	f.OmitString("error_class", &p.ErrorClass)
	f.String("outcome", &p.Outcome)
	f.OmitTimePtr("next_attempt_at", &p.NextAttemptAt)
	f.OmitString("response_excerpt", &p.ResponseExcerpt)
	f.OmitInt("open_user_id", &p.OpenUserID)
	f.OmitString("source_stream", &p.SourceStream)
}

func (p *DeliveryResendRequested) fields(f *jc.Fields) {
	f.String("delivery_id", &p.DeliveryID)
	f.String("requested_by", &p.RequestedBy)
	f.Time("at", &p.At)
}

func (p *IdempotencyClaimed) fields(f *jc.Fields) {
	f.Int("app_id", &p.AppID)
	f.String("method", &p.Method)
	f.String("path", &p.Path)
	f.String("body_sha256", &p.BodySHA256)
	f.Time("claimed_at", &p.ClaimedAt)
}

func (p *IdempotencyCompleted) fields(f *jc.Fields) {
	f.Int("app_id", &p.AppID)
	f.IntN("status", &p.Status)
	f.OmitString("content_type", &p.ContentType)
	f.String("sealed_body", &p.SealedBody)
	f.Time("completed_at", &p.CompletedAt)
}

func (p *ReportCreated) fields(f *jc.Fields) {
	f.Int("report_id", &p.ReportID)
	f.Int("app_id", &p.AppID)
	f.Int("open_user_id", &p.OpenUserID)
	f.String("channel_user_id", &p.ChannelUserID)
	f.IntPtr("open_member_id", &p.OpenMemberID)
	f.StringPtr("request_report_id", &p.RequestReportID)
	f.StringPtr("measurement_no", &p.MeasurementNo)
	f.StringPtr("device_sn", &p.DeviceSN)
	f.StringPtr("report_type", &p.ReportType)
	f.StringPtr("file_path", &p.FilePath)
	f.StringPtr("interpretation_result", &p.InterpretationResult)
	f.String("interpretation_detail", &p.InterpretationDetail)
	f.StringPtr("interpretation_method", &p.InterpretationMethod)
	f.Time("uploaded_at", &p.UploadedAt)
	f.TimePtr("examined_at", &p.ExaminedAt)
	f.TimePtr("interpreted_at", &p.InterpretedAt)
	if f.Object("meta") {
		f.StringPtr("points_code", &p.Meta.PointsCode)
		f.StringPtr("data_source", &p.Meta.DataSource)
		f.StringPtr("operator_name", &p.Meta.OperatorName)
		f.IntPtr("operator_platform_user_id", &p.Meta.OperatorPlatformUserID)
		f.End()
	}
	f.String("raw_data", &p.RawData)
	f.String("uploaded_by", &p.UploadedBy)
}

package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/healthdata"
)

// ReportInput is a report as the reporting side uploads it.
type ReportInput struct {
	OpenUserID           int64
	OpenMemberID         domain.Field[int64]
	RequestReportID      domain.Field[string]
	MeasurementNo        domain.Field[string]
	DeviceSN             domain.Field[string]
	ReportType           domain.Field[string]
	FilePath             domain.Field[string]
	InterpretationResult domain.Field[string]
	InterpretationDetail json.RawMessage // an object, or nil
	InterpretationMethod domain.Field[string]
	ExaminedAt           domain.Field[time.Time]
	InterpretedAt        domain.Field[time.Time]
	PointsCode           domain.Field[string]
	DataSource           domain.Field[string]
	OperatorName         domain.Field[string]
	OperatorUserID       domain.Field[int64]
	RawData              json.RawMessage // an object, required
}

// ReportResult answers an upload.
type ReportResult struct {
	ReportID int64
	AppID    int64
	Created  bool
	Position events.Position
}

// Reports handles the reporting side's commands and the pull's viewed mark.
type Reports struct {
	streams
	ids *Allocator
	now func() time.Time
}

// NewReports builds the handler.
func NewReports(store events.Store, reg *events.Registry, ids *Allocator, now func() time.Time) *Reports {
	return &Reports{streams: streams{store, reg}, ids: ids, now: now}
}

func isObject(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) > 0 && t[0] == '{' && json.Valid(t)
}

func (r *Reports) validate(in *ReportInput) error {
	v := &domain.ValidationError{}
	rl := rules{v: v}
	if in.OpenUserID < 1 {
		v.Add("open_user_id", "is required and must be a positive integer")
	}
	for _, f := range []struct {
		name string
		val  domain.Field[string]
		max  int
	}{
		{"request_report_id", in.RequestReportID, 100}, {"measurement_no", in.MeasurementNo, 100},
		{"device_sn", in.DeviceSN, 100}, {"report_type", in.ReportType, 64}, {"file_path", in.FilePath, 500},
		{"interpretation_result", in.InterpretationResult, 20000}, {"interpretation_method", in.InterpretationMethod, 32},
		{"meta.points_code", in.PointsCode, 64}, {"meta.data_source", in.DataSource, 32}, {"meta.operator_name", in.OperatorName, 64},
	} {
		if p := f.val.Ptr(); p != nil {
			rl.maxLen(f.name, *p, f.max)
		}
	}
	if in.RawData == nil {
		v.Add("raw_data", "is required")
	} else if !isObject(in.RawData) {
		v.Add("raw_data", "must be a JSON object")
	}
	if in.InterpretationDetail != nil && !isObject(in.InterpretationDetail) {
		v.Add("interpretation_detail", "must be a JSON object or null")
	}
	if err := v.Err(); err != nil {
		return err
	}
	stripped, err := healthdata.StripLargeFields(in.RawData)
	if err != nil {
		v.Add("raw_data", "must be valid JSON")
		return v
	}
	in.RawData = stripped
	return nil
}

func rawText(raw json.RawMessage) string {
	if raw == nil {
		return ""
	}
	return string(raw)
}

func timePtr(f domain.Field[time.Time]) *time.Time {
	if p := f.Ptr(); p != nil {
		t := p.UTC()
		return &t
	}
	return nil
}

// createReport is an upload with everything its decision needs: the
// report id (the claimed key's, or one allocated for it) and the time.
type createReport struct {
	In       ReportInput // validated
	Uploader string
	ReportID int64
	Now      time.Time
}

// checkReportUser refuses a report for a user bound to no app, or naming
// a member the user does not have.
func checkReportUser(user *userState, in ReportInput) error {
	if !user.registered {
		return domain.ErrUserNotBound
	}
	if id := in.OpenMemberID.Ptr(); id != nil {
		if _, ok := user.members[*id]; !ok {
			v := &domain.ValidationError{}
			v.Add("open_member_id", "is not a family member of this user")
			return v
		}
	}
	return nil
}

// reportKeyState is one (uploader, request_report_id) claim.
type reportKeyState struct{ reportID int64 }

func (s *reportKeyState) apply(env events.Envelope) {
	if b, ok := env.Payload.(*catalog.ReportKeyClaimed); ok {
		s.reportID = b.ReportID
	}
}

// decideClaimReportKey claims the request_report_id for the report; a
// claimed key decides nothing.
func decideClaimReportKey(key *reportKeyState, c createReport) []events.Payload {
	if key.reportID != 0 {
		return nil
	}
	return []events.Payload{catalog.ReportKeyClaimed{Uploader: c.Uploader, RequestReportID: *c.In.RequestReportID.Ptr(), ReportID: c.ReportID}}
}

// replayReport answers a request_report_id whose report exists: a retry
// for the same user is done, one for another user is refused.
func replayReport(st *reportState, openUserID int64) (bool, error) {
	if st.created == nil {
		return false, nil
	}
	if st.created.OpenUserID != openUserID {
		return false, domain.ErrDuplicateReportKey
	}
	return true, nil
}

// decideCreateReport records the report for the user's app; a report that
// exists (a retried request_report_id) decides nothing or is refused.
func decideCreateReport(user *userState, st *reportState, c createReport) ([]events.Payload, error) {
	if err := checkReportUser(user, c.In); err != nil {
		return nil, err
	}
	if done, err := replayReport(st, c.In.OpenUserID); done || err != nil {
		return nil, err
	}
	in := c.In
	return []events.Payload{catalog.ReportCreated{
		ReportID: c.ReportID, AppID: user.appID, OpenUserID: in.OpenUserID, ChannelUserID: user.channelUserID,
		OpenMemberID: in.OpenMemberID.Ptr(), RequestReportID: in.RequestReportID.Ptr(), MeasurementNo: in.MeasurementNo.Ptr(),
		DeviceSN: in.DeviceSN.Ptr(), ReportType: in.ReportType.Ptr(), FilePath: in.FilePath.Ptr(),
		InterpretationResult: in.InterpretationResult.Ptr(), InterpretationDetail: rawText(in.InterpretationDetail),
		InterpretationMethod: in.InterpretationMethod.Ptr(), UploadedAt: c.Now.UTC(),
		ExaminedAt: timePtr(in.ExaminedAt), InterpretedAt: timePtr(in.InterpretedAt),
		Meta:    catalog.ReportMeta{PointsCode: in.PointsCode.Ptr(), DataSource: in.DataSource.Ptr(), OperatorName: in.OperatorName.Ptr(), OperatorPlatformUserID: in.OperatorUserID.Ptr()},
		RawData: rawText(in.RawData), UploadedBy: c.Uploader,
	}}, nil
}

// Create records a report for a user bound to an app. With a
// request_report_id the upload is idempotent per uploader: a retry answers
// with the same report id and creates nothing.
func (r *Reports) Create(ctx context.Context, in ReportInput, uploader string, meta Meta) (ReportResult, error) {
	if err := r.validate(&in); err != nil {
		return ReportResult{}, err
	}
	user := newUserState()
	if _, _, err := r.load(ctx, domain.UserStream(in.OpenUserID), user.apply); err != nil {
		return ReportResult{}, err
	}
	if err := checkReportUser(user, in); err != nil {
		return ReportResult{}, err
	}
	meta.AppID = user.appID
	var newID int64 // allocated once, when no key names a report
	var out ReportResult
	res, appended, err := executeParts(ctx, r.streams, &meta, func() ([]decided, error) {
		c := createReport{In: in, Uploader: uploader}
		var k reportKeyState
		key := ""
		if p := in.RequestReportID.Ptr(); p != nil && *p != "" {
			key = domain.ReportKeyStream(uploader, *p)
			if _, _, err := r.load(ctx, key, k.apply); err != nil {
				return nil, err
			}
		}
		c.ReportID = k.reportID
		if c.ReportID == 0 {
			if newID == 0 {
				var err error
				if newID, err = r.ids.Next(ctx, "report"); err != nil {
					return nil, err
				}
			}
			c.ReportID = newID
		}
		var st reportState
		version, pos, err := r.load(ctx, domain.ReportStream(c.ReportID), st.apply)
		if err != nil {
			return nil, err
		}
		c.Now = r.now()
		ps, err := decideCreateReport(user, &st, c)
		if err != nil {
			return nil, err
		}
		out = ReportResult{ReportID: c.ReportID, AppID: user.appID, Position: pos}
		if len(ps) == 0 {
			return nil, nil
		}
		parts := []decided{{stream: domain.ReportStream(c.ReportID), version: version, ps: ps}}
		if key != "" {
			if claim := decideClaimReportKey(&k, c); claim != nil {
				// The key and the report in one append where the store can.
				parts = []decided{{stream: key, ps: claim}, parts[0]}
			}
		}
		return parts, nil
	})
	if err != nil {
		return ReportResult{}, wrapAppend(err, "create report")
	}
	if appended {
		out.Created, out.Position = true, res.Position
	}
	return out, nil
}

// reportState is a report as decisions see it.
type reportState struct {
	created *catalog.ReportCreated
	viewed  bool
	last    catalog.ReportUpdated // patchable fields as of now
}

func (s *reportState) apply(env events.Envelope) {
	switch p := env.Payload.(type) {
	case *catalog.ReportCreated:
		s.created = p
		s.last = catalog.ReportUpdated{
			ReportID: p.ReportID, AppID: p.AppID, OpenUserID: p.OpenUserID, ChannelUserID: p.ChannelUserID,
			ReportType: p.ReportType, FilePath: p.FilePath, InterpretationResult: p.InterpretationResult,
			InterpretationDetail: p.InterpretationDetail, InterpretationMethod: p.InterpretationMethod, InterpretedAt: p.InterpretedAt,
		}
	case *catalog.ReportUpdated:
		s.last = *p
	case *catalog.ReportViewed:
		s.viewed = true
	}
}

// ReportPatch is a re-interpretation or correction of a report.
type ReportPatch struct {
	ReportType           domain.Field[string]
	FilePath             domain.Field[string]
	InterpretationResult domain.Field[string]
	InterpretationDetail domain.Field[json.RawMessage]
	InterpretationMethod domain.Field[string]
	InterpretedAt        domain.Field[time.Time]
}

// Update changes a report; a change of interpretation without interpreted_at
// stamps it with now. Nothing changed appends nothing.
func (r *Reports) Update(ctx context.Context, id int64, p ReportPatch, by string, meta Meta) (events.Position, error) {
	v := &domain.ValidationError{}
	rl := rules{v: v}
	for _, f := range []struct {
		name string
		val  domain.Field[string]
		max  int
	}{{"report_type", p.ReportType, 64}, {"file_path", p.FilePath, 500}, {"interpretation_result", p.InterpretationResult, 20000}, {"interpretation_method", p.InterpretationMethod, 32}} {
		if v := f.val.Ptr(); v != nil {
			rl.maxLen(f.name, *v, f.max)
		}
	}
	if d := p.InterpretationDetail.Ptr(); d != nil && !isObject(*d) {
		v.Add("interpretation_detail", "must be a JSON object or null")
	}
	if err := v.Err(); err != nil {
		return events.Position{}, err
	}
	return execute(ctx, r.streams, replay[*reportState]{func() *reportState { return &reportState{} }}, domain.ReportStream(id), &meta, func(st *reportState) ([]events.Payload, error) {
		ps, err := decideUpdateReport(st, updateReport{Patch: p, By: by, Now: r.now()})
		if len(ps) > 0 && err == nil {
			meta.AppID = st.created.AppID
		}
		return ps, err
	})
}

// updateReport is a validated patch, who sends it, and the time that
// stamps a re-interpretation sent without interpreted_at.
type updateReport struct {
	Patch ReportPatch
	By    string
	Now   time.Time
}

// decideUpdateReport records the fields that differ; an uploader changes
// only its own reports, and nothing different decides nothing.
func decideUpdateReport(st *reportState, c updateReport) ([]events.Payload, error) {
	p := c.Patch
	if st.created == nil || (strings.HasPrefix(c.By, "uploader:") && st.created.UploadedBy != c.By) {
		return nil, domain.ErrReportNotFound
	}
	next := st.last
	next.Changed, next.UpdatedBy = nil, c.By
	str := func(name string, f domain.Field[string], dst **string) {
		if f.Set && !equalPtr(*dst, f.Ptr()) {
			*dst = f.Ptr()
			next.Changed = append(next.Changed, name)
		}
	}
	str("report_type", p.ReportType, &next.ReportType)
	str("file_path", p.FilePath, &next.FilePath)
	str("interpretation_result", p.InterpretationResult, &next.InterpretationResult)
	str("interpretation_method", p.InterpretationMethod, &next.InterpretationMethod)
	if p.InterpretationDetail.Set {
		d := ""
		if v := p.InterpretationDetail.Ptr(); v != nil {
			d = string(*v)
		}
		if d != next.InterpretationDetail {
			next.InterpretationDetail = d
			next.Changed = append(next.Changed, "interpretation_detail")
		}
	}
	if p.InterpretedAt.Set {
		if t := timePtr(p.InterpretedAt); !equalTime(t, next.InterpretedAt) {
			next.InterpretedAt = t
			next.Changed = append(next.Changed, "interpreted_at")
		}
	} else if len(next.Changed) > 0 && (p.InterpretationResult.Set || p.InterpretationDetail.Set) {
		now := c.Now.UTC()
		next.InterpretedAt = &now
		next.Changed = append(next.Changed, "interpreted_at")
	}
	if len(next.Changed) == 0 {
		return nil, nil
	}
	return []events.Payload{next}, nil
}

func equalTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}

// decideMarkViewed records the owning app's first pull of a report; a
// report already viewed decides nothing.
func decideMarkViewed(st *reportState, appID int64) ([]events.Payload, error) {
	if st.created == nil || st.created.AppID != appID {
		return nil, domain.ErrReportNotFound
	}
	if st.viewed {
		return nil, nil
	}
	return []events.Payload{catalog.ReportViewed{ReportID: st.created.ReportID, AppID: appID}}, nil
}

// MarkViewed records the owning app's first pull; later pulls append nothing.
// The app itself is the actor: the query side calls this through its own port.
func (r *Reports) MarkViewed(ctx context.Context, appID, id int64, requestID string) (events.Position, error) {
	meta := Meta{Actor: "app:" + strconv.FormatInt(appID, 10), RequestID: requestID}
	meta.AppID = appID
	// A concurrent pull that marked it first answers (onConflict nil).
	return executeOnce(ctx, r.streams, replay[*reportState]{func() *reportState { return &reportState{} }}, domain.ReportStream(id), &meta, nil, func(st *reportState) ([]events.Payload, error) {
		return decideMarkViewed(st, appID)
	})
}

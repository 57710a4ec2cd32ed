package commands

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
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
	if !user.registered {
		return ReportResult{}, domain.ErrUserNotBound
	}
	if id := in.OpenMemberID.Ptr(); id != nil {
		if _, ok := user.members[*id]; !ok {
			v := &domain.ValidationError{}
			v.Add("open_member_id", "is not a family member of this user")
			return ReportResult{}, v
		}
	}
	meta.AppID = user.appID
	for attempt := 0; attempt < maxAttempts; attempt++ {
		var reportID int64
		key := ""
		if p := in.RequestReportID.Ptr(); p != nil && *p != "" {
			key = domain.ReportKeyStream(uploader, *p)
			if _, _, err := r.load(ctx, key, func(env events.Envelope) {
				if b, ok := env.Payload.(*catalog.ReportKeyClaimed); ok {
					reportID = b.ReportID
				}
			}); err != nil {
				return ReportResult{}, err
			}
		}
		if reportID != 0 {
			var existing reportState
			_, pos, err := r.load(ctx, domain.ReportStream(reportID), existing.apply)
			if err != nil {
				return ReportResult{}, err
			}
			if existing.created != nil {
				if existing.created.OpenUserID != in.OpenUserID {
					return ReportResult{}, domain.ErrDuplicateReportKey
				}
				return ReportResult{ReportID: reportID, AppID: user.appID, Position: pos}, nil
			}
		}
		id := reportID
		if id == 0 {
			var err error
			if id, err = r.ids.Next(ctx, "report"); err != nil {
				return ReportResult{}, err
			}
		}
		ev := catalog.ReportCreated{
			ReportID: id, AppID: user.appID, OpenUserID: in.OpenUserID, ChannelUserID: user.channelUserID,
			OpenMemberID: in.OpenMemberID.Ptr(), RequestReportID: in.RequestReportID.Ptr(), MeasurementNo: in.MeasurementNo.Ptr(),
			DeviceSN: in.DeviceSN.Ptr(), ReportType: in.ReportType.Ptr(), FilePath: in.FilePath.Ptr(),
			InterpretationResult: in.InterpretationResult.Ptr(), InterpretationDetail: rawText(in.InterpretationDetail),
			InterpretationMethod: in.InterpretationMethod.Ptr(), UploadedAt: r.now().UTC(),
			ExaminedAt: timePtr(in.ExaminedAt), InterpretedAt: timePtr(in.InterpretedAt),
			Meta:    catalog.ReportMeta{PointsCode: in.PointsCode.Ptr(), DataSource: in.DataSource.Ptr(), OperatorName: in.OperatorName.Ptr(), OperatorPlatformUserID: in.OperatorUserID.Ptr()},
			RawData: rawText(in.RawData), UploadedBy: uploader,
		}
		if key != "" && reportID == 0 {
			claim := catalog.ReportKeyClaimed{Uploader: uploader, RequestReportID: *in.RequestReportID.Ptr(), ReportID: id}
			if _, err := r.append(ctx, key, 0, meta, claim); events.IsConflict(err) {
				continue
			} else if err != nil {
				return ReportResult{}, err
			}
		}
		res, err := r.append(ctx, domain.ReportStream(id), 0, meta, ev)
		if events.IsConflict(err) {
			continue
		}
		if err != nil {
			return ReportResult{}, fmt.Errorf("create report: %w", err)
		}
		return ReportResult{ReportID: id, AppID: user.appID, Created: true, Position: res.Position}, nil
	}
	return ReportResult{}, domain.ErrContention
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
	for attempt := 0; attempt < maxAttempts; attempt++ {
		var st reportState
		version, pos, err := r.load(ctx, domain.ReportStream(id), st.apply)
		if err != nil {
			return events.Position{}, err
		}
		if st.created == nil || (strings.HasPrefix(by, "uploader:") && st.created.UploadedBy != by) {
			return events.Position{}, domain.ErrReportNotFound // an uploader changes only its own reports
		}
		next := st.last
		next.Changed, next.UpdatedBy = nil, by
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
			now := r.now().UTC()
			next.InterpretedAt = &now
			next.Changed = append(next.Changed, "interpreted_at")
		}
		if len(next.Changed) == 0 {
			return pos, nil
		}
		meta.AppID = st.created.AppID
		res, err := r.append(ctx, domain.ReportStream(id), version, meta, next)
		if events.IsConflict(err) {
			continue
		}
		return res.Position, err
	}
	return events.Position{}, domain.ErrContention
}

func equalTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}

// MarkViewed records the owning app's first pull; later pulls append nothing.
// The app itself is the actor: the query side calls this through its own port.
func (r *Reports) MarkViewed(ctx context.Context, appID, id int64, requestID string) (events.Position, error) {
	meta := Meta{Actor: "app:" + strconv.FormatInt(appID, 10), RequestID: requestID}
	var st reportState
	version, pos, err := r.load(ctx, domain.ReportStream(id), st.apply)
	if err != nil {
		return events.Position{}, err
	}
	if st.created == nil || st.created.AppID != appID {
		return events.Position{}, domain.ErrReportNotFound
	}
	if st.viewed {
		return pos, nil
	}
	meta.AppID = appID
	res, err := r.append(ctx, domain.ReportStream(id), version, meta, catalog.ReportViewed{ReportID: id, AppID: appID})
	if events.IsConflict(err) {
		return pos, nil // a concurrent pull marked it first
	}
	return res.Position, err
}

package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/google/uuid"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/plugin"
)

// SessionLifetime bounds how long a launched plugin may take to submit.
const SessionLifetime = 30 * time.Minute

// PhoneDirectory binds a measurement to an app's user when the host passed a
// phone; a lookup, not an invariant, so the read model may answer it.
type PhoneDirectory interface {
	UserIDByPhone(ctx context.Context, appID int64, phone string) (int64, bool, error)
}

// Plugin handles the measurement plugin's sessions and measurements.
type Plugin struct {
	streams
	ids    *Allocator
	now    func() time.Time
	phones PhoneDirectory
}

// NewPlugin builds the handler.
func NewPlugin(store events.Store, reg *events.Registry, ids *Allocator, now func() time.Time, phones PhoneDirectory) *Plugin {
	return &Plugin{streams: streams{store, reg}, ids: ids, now: now, phones: phones}
}

// PluginApp is what plugin commands need of the calling app.
type PluginApp struct {
	AppID     int64
	AppKey    string
	AppSecret string
	Sandbox   bool
}

// Session answers an opened session.
type Session struct {
	SessionID  string
	ReportType string
	ExpiresAt  time.Time
	Position   events.Position
}

// OpenSession verifies a launch (timestamp window, signature, single-use
// nonce, encrypted profile and its device rules) and opens a session.
func (p *Plugin) OpenSession(ctx context.Context, app PluginApp, l plugin.Launch, meta Meta) (Session, error) {
	if l.AppKey != app.AppKey {
		return Session{}, domain.ErrPluginAuth
	}
	now := p.now()
	profile, err := l.Verify(app.AppSecret, now)
	var fe plugin.FieldError
	switch {
	case errors.As(err, &fe) && fe.Field != "sign" && fe.Field != "nonce" && fe.Field != "timestamp":
		v := &domain.ValidationError{}
		v.Add(fieldName(fe.Field), fe.Reason)
		return Session{}, v
	case err != nil:
		return Session{}, fmt.Errorf("%w: %w", domain.ErrPluginAuth, err)
	}
	reportType, _ := plugin.ReportType(l.DeviceKey, l.MeasureMode)
	id := uuid.NewString()
	meta.AppID = app.AppID
	claim := domain.PluginNonceStream(app.AppID, l.Nonce)
	if _, err := p.append(ctx, claim, 0, meta, catalog.PluginNonceClaimed{AppID: app.AppID, Nonce: l.Nonce, SessionID: id}); events.IsConflict(err) {
		return Session{}, domain.ErrNonceUsed
	} else if err != nil {
		return Session{}, err
	}
	opened := sessionOpened(id, app, l.ThirdUserID, l.DeviceKey, l.MeasureMode, reportType, profile, now)
	res, err := p.append(ctx, domain.PluginSessionStream(id), 0, meta, opened)
	if err != nil {
		return Session{}, err
	}
	return Session{SessionID: id, ReportType: reportType, ExpiresAt: opened.ExpiresAt, Position: res.Position}, nil
}

// fieldName maps the plugin package's field names to the request's.
func fieldName(f string) string {
	switch f {
	case "deviceKey", "measureMode", "thirdUserId", "userProfile", "appKey":
		return f
	}
	return "userProfile." + f
}

func sessionOpened(id string, app PluginApp, thirdUserID, deviceKey, mode, reportType string, pr plugin.Profile, now time.Time) catalog.PluginSessionOpened {
	var md *string
	if pr.Metadata != "" {
		m := pr.Metadata
		md = &m
	}
	return catalog.PluginSessionOpened{
		SessionID: id, AppID: app.AppID, ThirdUserID: thirdUserID, DeviceKey: deviceKey, MeasureMode: mode, ReportType: reportType,
		Phone: pr.Phone, Gender: pr.Gender, BirthDate: pr.BirthDate, Height: pr.Height, Weight: pr.Weight, Metadata: md,
		Sandbox: app.Sandbox, ExpiresAt: now.UTC().Add(SessionLifetime),
	}
}

// sessionState is a session as decisions see it.
type sessionState struct {
	opened   *catalog.PluginSessionOpened
	recorded *catalog.PluginMeasurementRecorded
	analyzed bool
}

func (s *sessionState) apply(env events.Envelope) {
	switch p := env.Payload.(type) {
	case *catalog.PluginSessionOpened:
		s.opened = p
	case *catalog.PluginMeasurementRecorded:
		s.recorded = p
	case *catalog.PluginMeasurementAnalyzed:
		s.analyzed = true
	}
}

// needsAnalysis: ECG and body composition wait for the algorithm step.
func needsAnalysis(reportType string) bool { return reportType == "ecg" || reportType == "bca" }

// Measurement answers a submitted measurement.
type Measurement struct {
	MeasurementNo string
	ReportType    string
	Position      events.Position
}

func (p *Plugin) measurementNo(ctx context.Context) (string, error) {
	id, err := p.ids.Next(ctx, "measurement")
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("PM%s%08d", p.now().UTC().Format("20060102"), id), nil
}

func (p *Plugin) recorded(ctx context.Context, s *catalog.PluginSessionOpened, no string, deviceSN *string, data json.RawMessage, mock bool) (catalog.PluginMeasurementRecorded, error) {
	third := s.ThirdUserID
	m := catalog.PluginMeasurement{
		MeasurementNo: no, SessionID: s.SessionID, AppID: s.AppID, ThirdUserID: &third, ReportType: s.ReportType,
		DeviceKey: s.DeviceKey, MeasureMode: s.MeasureMode, Metadata: s.Metadata,
	}
	if s.Phone != "" && p.phones != nil {
		id, ok, err := p.phones.UserIDByPhone(ctx, s.AppID, s.Phone)
		if err != nil {
			return catalog.PluginMeasurementRecorded{}, err
		}
		if ok {
			m.PlatformUserID = &id
		}
	}
	return catalog.PluginMeasurementRecorded{PluginMeasurement: m, DeviceSN: deviceSN, Data: string(data), NeedsAnalysis: needsAnalysis(s.ReportType), Mock: mock}, nil
}

// checkSubmit refuses a submission to a session that was never opened, or
// that expired before its measurement was recorded (a recorded one answers
// again, expired or not).
func checkSubmit(st *sessionState, now time.Time) error {
	if st.opened == nil {
		return domain.ErrSessionNotFound
	}
	if st.recorded == nil && !now.Before(st.opened.ExpiresAt) {
		return domain.ErrSessionExpired
	}
	return nil
}

// Submit stores the session's measurement; a repeat returns the same number.
func (p *Plugin) Submit(ctx context.Context, sessionID string, deviceSN *string, data json.RawMessage, meta Meta) (Measurement, error) {
	if !isObject(data) {
		v := &domain.ValidationError{}
		v.Add("data", "is required and must be a JSON object with the device's output")
		return Measurement{}, v
	}
	if deviceSN != nil && len(*deviceSN) > 100 {
		v := &domain.ValidationError{}
		v.Add("device_sn", "must be at most 100 characters")
		return Measurement{}, v
	}
	for attempt := 0; attempt < maxAttempts; attempt++ {
		var st sessionState
		version, pos, err := p.load(ctx, domain.PluginSessionStream(sessionID), st.apply)
		if err != nil {
			return Measurement{}, err
		}
		if err := checkSubmit(&st, p.now()); err != nil {
			return Measurement{}, err
		}
		if st.recorded != nil {
			return Measurement{MeasurementNo: st.recorded.MeasurementNo, ReportType: st.opened.ReportType, Position: pos}, nil
		}
		no, err := p.measurementNo(ctx)
		if err != nil {
			return Measurement{}, err
		}
		ev, err := p.recorded(ctx, st.opened, no, deviceSN, data, false)
		if err != nil {
			return Measurement{}, err
		}
		meta.AppID = st.opened.AppID
		res, err := p.append(ctx, domain.PluginSessionStream(sessionID), version, meta, ev)
		if events.IsConflict(err) {
			continue
		}
		if err != nil {
			return Measurement{}, err
		}
		return Measurement{MeasurementNo: no, ReportType: st.opened.ReportType, Position: res.Position}, nil
	}
	return Measurement{}, domain.ErrContention
}

// MockMeasure is the sandbox mock: a session and a plausible measurement in
// one append, so plugin.report.ready follows within the dispatcher's latency.
func (p *Plugin) MockMeasure(ctx context.Context, app PluginApp, thirdUserID, deviceKey, mode string, meta Meta) (Measurement, error) {
	if !app.Sandbox {
		return Measurement{}, domain.ErrSandboxOnly
	}
	v := &domain.ValidationError{}
	if thirdUserID == "" {
		v.Add("thirdUserId", "is required")
	}
	reportType, err := plugin.ReportType(deviceKey, mode)
	var fe plugin.FieldError
	if errors.As(err, &fe) {
		v.Add(fe.Field, fe.Reason)
	} else if err != nil {
		v.Add("deviceKey", err.Error())
	}
	if err := v.Err(); err != nil {
		return Measurement{}, err
	}
	id := uuid.NewString()
	profile := plugin.Profile{Gender: "female", BirthDate: "1990-06-15", Height: 165, Weight: 5800}
	opened := sessionOpened(id, app, thirdUserID, deviceKey, mode, reportType, profile, p.now())
	no, err := p.measurementNo(ctx)
	if err != nil {
		return Measurement{}, err
	}
	data, _ := json.Marshal(mockData(reportType))
	rec, err := p.recorded(ctx, &opened, no, nil, data, true)
	if err != nil {
		return Measurement{}, err
	}
	meta.AppID = app.AppID
	res, err := p.append(ctx, domain.PluginSessionStream(id), 0, meta, opened, rec)
	if err != nil {
		return Measurement{}, err
	}
	return Measurement{MeasurementNo: no, ReportType: reportType, Position: res.Position}, nil
}

// mockData makes plausible device output for the sandbox.
func mockData(reportType string) map[string]any {
	r := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 7))
	between := func(lo, hi float64) float64 { return math.Round((lo+r.Float64()*(hi-lo))*10) / 10 }
	switch reportType {
	case "blood_pressure":
		return map[string]any{"systolic": int(between(105, 130)), "diastolic": int(between(65, 85)), "pulse": int(between(60, 90)), "unit": "mmHg"}
	case "blood_glucose":
		return map[string]any{"glucose": between(4.2, 6.8), "unit": "mmol/L", "meal": "fasting"}
	case "spo2":
		return map[string]any{"spo2": int(between(95, 99)), "pulse": int(between(60, 90))}
	case "ecg":
		rr := make([]int, 30)
		base := between(750, 950)
		for i := range rr {
			rr[i] = int(base + between(-25, 25))
		}
		return map[string]any{"rr_intervals_ms": rr, "lead": "I", "duration_s": 30}
	default: // bca
		return map[string]any{"weight": between(50, 80), "impedance_ohm": int(between(420, 560))}
	}
}

// Analyze runs the algorithm step of an ECG or body-composition measurement
// and records its result; it is idempotent (the append expects the
// session's revision, so a replay or a second node finds it done).
func (p *Plugin) Analyze(ctx context.Context, sessionID string) (events.Position, error) {
	var st sessionState
	version, pos, err := p.load(ctx, domain.PluginSessionStream(sessionID), st.apply)
	if err != nil || st.recorded == nil || !st.recorded.NeedsAnalysis || st.analyzed {
		return pos, err
	}
	result := analyze(st.opened, st.recorded, p.now())
	raw, err := json.Marshal(result)
	if err != nil {
		return pos, err
	}
	meta := Meta{AppID: st.opened.AppID, Actor: "analyzer"}
	res, err := p.append(ctx, domain.PluginSessionStream(sessionID), version, meta, catalog.PluginMeasurementAnalyzed{PluginMeasurement: st.recorded.PluginMeasurement, Result: string(raw)})
	if events.IsConflict(err) {
		return pos, nil
	}
	return res.Position, err
}

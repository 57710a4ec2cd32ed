package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/internal/measureplugin"
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

// openSession is OpenSession with what its decision needs gathered: the
// calling app, the launch, the time and the new session's id.
type openSession struct {
	App       PluginApp
	Launch    measureplugin.Launch
	Now       time.Time
	SessionID string
}

// nonceState is a launch nonce's stream: claimed by one session at most.
type nonceState struct{ claimed bool }

func (s *nonceState) apply(env events.Envelope) {
	if _, ok := env.Payload.(*catalog.PluginNonceClaimed); ok {
		s.claimed = true
	}
}

// verifyLaunch checks a launch as of now: the app's key, the timestamp
// window, the nonce's form and the signature (PLUGIN_AUTH), then the device
// and the decrypted profile with its device rules (VALIDATION_ERROR).
func verifyLaunch(c openSession) (measureplugin.Profile, string, error) {
	l := c.Launch
	if l.AppKey != c.App.AppKey {
		return measureplugin.Profile{}, "", domain.ErrPluginAuth
	}
	profile, err := l.Verify(c.App.AppSecret, c.Now)
	var fe measureplugin.FieldError
	switch {
	case errors.As(err, &fe) && fe.Field != "sign" && fe.Field != "nonce" && fe.Field != "timestamp":
		v := &domain.ValidationError{}
		v.Add(fieldName(fe.Field), fe.Reason)
		return measureplugin.Profile{}, "", v
	case err != nil:
		return measureplugin.Profile{}, "", fmt.Errorf("%w: %w", domain.ErrPluginAuth, err)
	}
	reportType, _ := measureplugin.ReportType(l.DeviceKey, l.MeasureMode)
	return profile, reportType, nil
}

// decideOpenSession opens a session for a verified launch whose nonce no
// session claimed yet. It decides two events on two streams: the nonce's
// claim, then the session's opening.
func decideOpenSession(nonce *nonceState, c openSession) ([]events.Payload, error) {
	profile, reportType, err := verifyLaunch(c)
	if err != nil {
		return nil, err
	}
	if nonce.claimed {
		return nil, domain.ErrNonceUsed
	}
	l := c.Launch
	return []events.Payload{
		catalog.PluginNonceClaimed{AppID: c.App.AppID, Nonce: l.Nonce, SessionID: c.SessionID},
		sessionOpened(c.SessionID, c.App, l.ThirdUserID, l.DeviceKey, l.MeasureMode, reportType, profile, c.Now),
	}, nil
}

// OpenSession verifies a launch (timestamp window, signature, single-use
// nonce, encrypted profile and its device rules) and opens a session.
func (p *Plugin) OpenSession(ctx context.Context, app PluginApp, l measureplugin.Launch, meta Meta) (Session, error) {
	c := openSession{App: app, Launch: l, Now: p.now(), SessionID: uuid.NewString()}
	if _, _, err := verifyLaunch(c); err != nil {
		return Session{}, err // before the nonce's stream is read
	}
	claim := domain.PluginNonceStream(app.AppID, l.Nonce)
	var nonce nonceState
	version, _, err := p.load(ctx, claim, nonce.apply)
	if err != nil {
		return Session{}, err
	}
	ps, err := decideOpenSession(&nonce, c)
	if err != nil {
		return Session{}, err
	}
	meta.AppID = app.AppID
	if _, err := p.append(ctx, claim, version, meta, ps[0]); events.IsConflict(err) {
		return Session{}, domain.ErrNonceUsed // claimed meanwhile
	} else if err != nil {
		return Session{}, err
	}
	opened := ps[1].(catalog.PluginSessionOpened)
	res, err := p.append(ctx, domain.PluginSessionStream(c.SessionID), 0, meta, opened)
	if err != nil {
		return Session{}, err
	}
	return Session{SessionID: c.SessionID, ReportType: opened.ReportType, ExpiresAt: opened.ExpiresAt, Position: res.Position}, nil
}

// fieldName maps the plugin package's field names to the request's.
func fieldName(f string) string {
	switch f {
	case "deviceKey", "measureMode", "thirdUserId", "userProfile", "appKey":
		return f
	}
	return "userProfile." + f
}

func sessionOpened(id string, app PluginApp, thirdUserID, deviceKey, mode, reportType string, pr measureplugin.Profile, now time.Time) catalog.PluginSessionOpened {
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

// measurementNo renders a measurement's number: PM, the day it was
// recorded (UTC) and its sequence number.
func measurementNo(id int64, now time.Time) string {
	return fmt.Sprintf("PM%s%08d", now.UTC().Format("20060102"), id)
}

// recorded is the session's measurement under its number, bound to the
// app's user with the session's phone when there is one (platformUserID).
func recorded(s *catalog.PluginSessionOpened, no string, platformUserID *int64, deviceSN *string, data json.RawMessage, mock bool) catalog.PluginMeasurementRecorded {
	third := s.ThirdUserID
	m := catalog.PluginMeasurement{
		MeasurementNo: no, SessionID: s.SessionID, AppID: s.AppID, ThirdUserID: &third, PlatformUserID: platformUserID, ReportType: s.ReportType,
		DeviceKey: s.DeviceKey, MeasureMode: s.MeasureMode, Metadata: s.Metadata,
	}
	return catalog.PluginMeasurementRecorded{PluginMeasurement: m, DeviceSN: deviceSN, Data: string(data), NeedsAnalysis: needsAnalysis(s.ReportType), Mock: mock}
}

// phoneUser finds the app's user with the session's phone: nil when the
// session has none or no user has it.
func (p *Plugin) phoneUser(ctx context.Context, s *catalog.PluginSessionOpened) (*int64, error) {
	if s.Phone == "" || p.phones == nil {
		return nil, nil
	}
	id, ok, err := p.phones.UserIDByPhone(ctx, s.AppID, s.Phone)
	if err != nil || !ok {
		return nil, err
	}
	return &id, nil
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

// validateSubmit checks a submission's body: the device's output as a
// JSON object, and a bounded device_sn.
func validateSubmit(deviceSN *string, data json.RawMessage) error {
	v := &domain.ValidationError{}
	if !isObject(data) {
		v.Add("data", "is required and must be a JSON object with the device's output")
	} else if deviceSN != nil && utf8.RuneCountInString(*deviceSN) > 100 {
		v.Add("device_sn", "must be at most 100 characters")
	}
	return v.Err()
}

// submitMeasurement is Submit with what its decision needs gathered: the
// time, the measurement's sequence number and the app's user with the
// session's phone (nil when none).
type submitMeasurement struct {
	DeviceSN       *string
	Data           json.RawMessage
	Now            time.Time
	MeasurementID  int64
	PlatformUserID *int64
}

// decideSubmit records the session's measurement once; a recorded one
// decides nothing (the submission answers it again).
func decideSubmit(st *sessionState, c submitMeasurement) ([]events.Payload, error) {
	if err := checkSubmit(st, c.Now); err != nil {
		return nil, err
	}
	if st.recorded != nil {
		return nil, nil
	}
	return []events.Payload{recorded(st.opened, measurementNo(c.MeasurementID, c.Now), c.PlatformUserID, c.DeviceSN, c.Data, false)}, nil
}

// Submit stores the session's measurement; a repeat returns the same number.
func (p *Plugin) Submit(ctx context.Context, sessionID string, deviceSN *string, data json.RawMessage, meta Meta) (Measurement, error) {
	if err := validateSubmit(deviceSN, data); err != nil {
		return Measurement{}, err
	}
	c := submitMeasurement{DeviceSN: deviceSN, Data: data}
	looked := false
	var out Measurement
	pos, err := execute(ctx, p.streams, replay[*sessionState]{func() *sessionState { return &sessionState{} }}, domain.PluginSessionStream(sessionID), &meta, func(st *sessionState) ([]events.Payload, error) {
		c.Now = p.now()
		if err := checkSubmit(st, c.Now); err != nil {
			return nil, err
		}
		if st.recorded != nil { // a repeat: the recorded measurement
			out = Measurement{MeasurementNo: st.recorded.MeasurementNo, ReportType: st.opened.ReportType}
			return nil, nil
		}
		// Gathered once the checks pass, and kept across retries.
		var err error
		if c.MeasurementID == 0 {
			if c.MeasurementID, err = p.ids.Next(ctx, "measurement"); err != nil {
				return nil, err
			}
		}
		if !looked {
			if c.PlatformUserID, err = p.phoneUser(ctx, st.opened); err != nil {
				return nil, err
			}
			looked = true
		}
		ps, err := decideSubmit(st, c)
		if err != nil {
			return nil, err
		}
		meta.AppID = st.opened.AppID
		ev := ps[0].(catalog.PluginMeasurementRecorded)
		out = Measurement{MeasurementNo: ev.MeasurementNo, ReportType: ev.ReportType}
		return ps, nil
	})
	if err != nil {
		return Measurement{}, err
	}
	out.Position = pos
	return out, nil
}

// mockMeasure is MockMeasure with what its decision needs gathered: the
// new session's id, the measurement's sequence number, the time and the
// seed of the plausible numbers.
type mockMeasure struct {
	App           PluginApp
	ThirdUserID   string
	DeviceKey     string
	Mode          string
	SessionID     string
	MeasurementID int64
	Now           time.Time
	Seed          uint64
}

// checkMock refuses the mock to a production app (SANDBOX_ONLY), then a
// missing thirdUserId or an unknown device or mode; it answers the report
// type the measurement will have.
func checkMock(c mockMeasure) (string, error) {
	if !c.App.Sandbox {
		return "", domain.ErrSandboxOnly
	}
	v := &domain.ValidationError{}
	if c.ThirdUserID == "" {
		v.Add("thirdUserId", "is required")
	}
	reportType, err := measureplugin.ReportType(c.DeviceKey, c.Mode)
	var fe measureplugin.FieldError
	if errors.As(err, &fe) {
		v.Add(fe.Field, fe.Reason)
	} else if err != nil {
		v.Add("deviceKey", err.Error())
	}
	return reportType, v.Err()
}

// mockProfile is the sandbox user every mock measures.
var mockProfile = measureplugin.Profile{Gender: "female", BirthDate: "1990-06-15", Height: 165, Weight: 5800}

// decideMockMeasure opens a session and records a plausible measurement in
// it at once, marked as a mock.
func decideMockMeasure(c mockMeasure) ([]events.Payload, error) {
	reportType, err := checkMock(c)
	if err != nil {
		return nil, err
	}
	opened := sessionOpened(c.SessionID, c.App, c.ThirdUserID, c.DeviceKey, c.Mode, reportType, mockProfile, c.Now)
	data, err := json.Marshal(mockData(reportType, c.Seed))
	if err != nil {
		return nil, err
	}
	return []events.Payload{opened, recorded(&opened, measurementNo(c.MeasurementID, c.Now), nil, nil, data, true)}, nil
}

// MockMeasure is the sandbox mock: a session and a plausible measurement in
// one append, so plugin.report.ready follows within the dispatcher's latency.
func (p *Plugin) MockMeasure(ctx context.Context, app PluginApp, thirdUserID, deviceKey, mode string, meta Meta) (Measurement, error) {
	c := mockMeasure{App: app, ThirdUserID: thirdUserID, DeviceKey: deviceKey, Mode: mode, SessionID: uuid.NewString(), Seed: rand.Uint64()}
	if _, err := checkMock(c); err != nil {
		return Measurement{}, err // before an id is allocated
	}
	var err error
	if c.MeasurementID, err = p.ids.Next(ctx, "measurement"); err != nil {
		return Measurement{}, err
	}
	c.Now = p.now()
	ps, err := decideMockMeasure(c)
	if err != nil {
		return Measurement{}, err
	}
	meta.AppID = app.AppID
	res, err := p.append(ctx, domain.PluginSessionStream(c.SessionID), 0, meta, ps...)
	if err != nil {
		return Measurement{}, err
	}
	rec := ps[1].(catalog.PluginMeasurementRecorded)
	return Measurement{MeasurementNo: rec.MeasurementNo, ReportType: rec.ReportType, Position: res.Position}, nil
}

// mockData makes plausible device output for the sandbox.
// The seed decides every number, so the same seed makes the same data.
func mockData(reportType string, seed uint64) map[string]any {
	r := rand.New(rand.NewPCG(seed, 7))
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

// decideAnalyze records the algorithm step's result, as of now, for a
// recorded measurement that needs one and has none yet; any other session
// decides nothing.
func decideAnalyze(st *sessionState, now time.Time) ([]events.Payload, error) {
	if st.recorded == nil || !st.recorded.NeedsAnalysis || st.analyzed {
		return nil, nil
	}
	raw, err := json.Marshal(analyze(st.opened, st.recorded, now))
	if err != nil {
		return nil, err
	}
	return []events.Payload{catalog.PluginMeasurementAnalyzed{PluginMeasurement: st.recorded.PluginMeasurement, Result: string(raw)}}, nil
}

// Analyze runs the algorithm step of an ECG or body-composition measurement
// and records its result; it is idempotent (the append expects the
// session's revision, so a replay or a second node finds it done).
func (p *Plugin) Analyze(ctx context.Context, sessionID string) (events.Position, error) {
	var meta Meta
	return executeOnce(ctx, p.streams, replay[*sessionState]{func() *sessionState { return &sessionState{} }}, domain.PluginSessionStream(sessionID), &meta, nil, func(st *sessionState) ([]events.Payload, error) {
		ps, err := decideAnalyze(st, p.now())
		if err == nil && len(ps) > 0 {
			meta = Meta{AppID: st.opened.AppID, Actor: "analyzer"}
		}
		return ps, err
	})
}

package commands

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events"
	"github.com/healthtech/partner-open-platform/events/catalog"
	"github.com/healthtech/partner-open-platform/internal/measureplugin"
)

// Given/When/Then of the plugin decisions: opening a session, submitting
// its measurement, the sandbox mock and the algorithm step.

var pluginApp9 = PluginApp{AppID: 9, AppKey: "ak_9", AppSecret: "as_9", Sandbox: true}

// bcaProfile is what body composition needs, and a phone.
var bcaProfile = measureplugin.Profile{Phone: "13800138000", Gender: "female", BirthDate: "1990-06-15", Height: 165, Weight: 6000, Metadata: "visit 3"}

// launchAt builds a launch signed with app 9's secret at ts, as a host would,
// without the host-side checks (so a profile the platform refuses can be sent).
func launchAt(t *testing.T, ts time.Time, pr measureplugin.Profile, device, mode string) measureplugin.Launch {
	t.Helper()
	up, err := measureplugin.EncryptProfile(pluginApp9.AppSecret, pluginApp9.AppKey, "u1", pr)
	if err != nil {
		t.Fatal(err)
	}
	sec := strconv.FormatInt(ts.Unix(), 10)
	return measureplugin.Launch{AppKey: pluginApp9.AppKey, ThirdUserID: "u1", UserProfile: up, Timestamp: sec, Nonce: "n1",
		Sign: measureplugin.Sign(pluginApp9.AppSecret, pluginApp9.AppKey, "u1", sec, "n1"), DeviceKey: device, MeasureMode: mode}
}

func openCmd(t *testing.T) openSession {
	return openSession{App: pluginApp9, Launch: launchAt(t, fixedNow, bcaProfile, measureplugin.DeviceBodyComposition, measureplugin.ModeBodyComposition), Now: fixedNow, SessionID: "s1"}
}

var bcaOpened = catalog.PluginSessionOpened{SessionID: "s1", AppID: 9, ThirdUserID: "u1", DeviceKey: measureplugin.DeviceBodyComposition, MeasureMode: measureplugin.ModeBodyComposition,
	ReportType: "bca", Phone: "13800138000", Gender: "female", BirthDate: "1990-06-15", Height: 165, Weight: 6000, Metadata: ptr("visit 3"),
	Sandbox: true, ExpiresAt: fixedNow.Add(SessionLifetime)}

func TestOpenSessionDecision(t *testing.T) {
	got, err := decideOpenSession(given(t, &nonceState{}), openCmd(t))
	then(t, got, err, catalog.PluginNonceClaimed{AppID: 9, Nonce: "n1", SessionID: "s1"}, bcaOpened)

	t.Run("NONCE_ALREADY_USED", func(t *testing.T) {
		used := given(t, &nonceState{}, catalog.PluginNonceClaimed{AppID: 9, Nonce: "n1", SessionID: "s0"})
		got, err := decideOpenSession(used, openCmd(t))
		thenError(t, got, err, domain.ErrNonceUsed)
	})
	t.Run("PLUGIN_AUTH", func(t *testing.T) {
		cases := map[string]func(*openSession){
			"another app's key":          func(c *openSession) { c.App.AppKey = "ak_8" },
			"wrong secret":               func(c *openSession) { c.App.AppSecret = "as_8" },
			"bad signature":              func(c *openSession) { c.Launch.Sign = strings.Repeat("0", 64) },
			"signature of another nonce": func(c *openSession) { c.Launch.Nonce = "n2" },
			"no nonce":                   func(c *openSession) { c.Launch.Nonce = "" },
			"millisecond timestamp":      func(c *openSession) { c.Launch.Timestamp += "000" },
			"301 s late":                 func(c *openSession) { c.Now = fixedNow.Add(301 * time.Second) },
			"301 s early":                func(c *openSession) { c.Now = fixedNow.Add(-301 * time.Second) },
			"profile of another user": func(c *openSession) {
				c.Launch.ThirdUserID = "u2" // the profile stays sealed to u1
				c.Launch.Sign = measureplugin.Sign(pluginApp9.AppSecret, pluginApp9.AppKey, "u2", c.Launch.Timestamp, c.Launch.Nonce)
			},
		}
		for name, edit := range cases {
			t.Run(name, func(t *testing.T) {
				c := openCmd(t)
				edit(&c)
				got, err := decideOpenSession(given(t, &nonceState{}), c)
				thenError(t, got, err, domain.ErrPluginAuth)
			})
		}
		c := openCmd(t)
		c.Now = fixedNow.Add(300 * time.Second) // the window's edge is inside
		if _, err := decideOpenSession(given(t, &nonceState{}), c); err != nil {
			t.Fatalf("300 s late refused: %v", err)
		}
	})
	t.Run("device rules", func(t *testing.T) {
		cases := map[string]struct {
			field string
			edit  func(*measureplugin.Profile, *string, *string)
		}{
			"body composition needs height":     {"userProfile.height", func(p *measureplugin.Profile, _, _ *string) { p.Height = 0 }},
			"body composition needs gender":     {"userProfile.gender", func(p *measureplugin.Profile, _, _ *string) { p.Gender = "" }},
			"body composition needs birth_date": {"userProfile.birth_date", func(p *measureplugin.Profile, _, _ *string) { p.BirthDate = "" }},
			"birth_date in the future":          {"userProfile.birth_date", func(p *measureplugin.Profile, _, _ *string) { p.BirthDate = "2026-11-22" }},
			"bad phone":                         {"userProfile.phone", func(p *measureplugin.Profile, _, _ *string) { p.Phone = "12345" }},
			"unknown device":                    {"deviceKey", func(_ *measureplugin.Profile, d, _ *string) { *d = "TOASTER" }},
			"mode of another device":            {"measureMode", func(_ *measureplugin.Profile, _, m *string) { *m = measureplugin.ModeECG }},
		}
		for name, c := range cases {
			t.Run(name, func(t *testing.T) {
				pr, device, mode := bcaProfile, measureplugin.DeviceBodyComposition, measureplugin.ModeBodyComposition
				c.edit(&pr, &device, &mode)
				cmd := openCmd(t)
				cmd.Launch = launchAt(t, fixedNow, pr, device, mode)
				got, err := decideOpenSession(given(t, &nonceState{}), cmd)
				thenInvalid(t, err, c.field)
				if got != nil {
					t.Fatalf("a refusal decided %v", got)
				}
			})
		}
		// Other devices do without height, gender and birth date.
		cmd := openCmd(t)
		cmd.Launch = launchAt(t, fixedNow, measureplugin.Profile{}, measureplugin.DeviceSpO2Ring, measureplugin.ModeSpO2)
		got, err := decideOpenSession(given(t, &nonceState{}), cmd)
		then(t, got, err, catalog.PluginNonceClaimed{AppID: 9, Nonce: "n1", SessionID: "s1"},
			catalog.PluginSessionOpened{SessionID: "s1", AppID: 9, ThirdUserID: "u1", DeviceKey: measureplugin.DeviceSpO2Ring, MeasureMode: measureplugin.ModeSpO2,
				ReportType: "spo2", Sandbox: true, ExpiresAt: fixedNow.Add(SessionLifetime)})
	})
}

func TestSubmitChecks(t *testing.T) {
	opened := catalog.PluginSessionOpened{SessionID: "s1", AppID: 9, ReportType: "spo2", ExpiresAt: fixedNow.Add(SessionLifetime)}
	if err := checkSubmit(given(t, &sessionState{}, opened), fixedNow); err != nil {
		t.Fatalf("open session refused: %v", err)
	}
	if err := checkSubmit(given(t, &sessionState{}), fixedNow); err != domain.ErrSessionNotFound {
		t.Fatalf("%v, want SESSION_NOT_FOUND", err)
	}
	if err := checkSubmit(given(t, &sessionState{}, opened), opened.ExpiresAt); err != domain.ErrSessionExpired {
		t.Fatalf("%v, want the session expired", err)
	}
	recorded := catalog.PluginMeasurementRecorded{PluginMeasurement: catalog.PluginMeasurement{MeasurementNo: "PM1", SessionID: "s1", AppID: 9}}
	if err := checkSubmit(given(t, &sessionState{}, opened, recorded), opened.ExpiresAt); err != nil {
		t.Fatalf("a recorded measurement answers again after expiry: %v", err)
	}
}

// bcaRecorded is measurement 42 of session s1, bound to user 5 by the phone.
func bcaRecorded(data string) catalog.PluginMeasurementRecorded {
	return catalog.PluginMeasurementRecorded{PluginMeasurement: catalog.PluginMeasurement{MeasurementNo: "PM2026112100000042", SessionID: "s1", AppID: 9,
		ThirdUserID: ptr("u1"), PlatformUserID: ptr[int64](5), ReportType: "bca", DeviceKey: measureplugin.DeviceBodyComposition, MeasureMode: measureplugin.ModeBodyComposition,
		Metadata: ptr("visit 3")}, DeviceSN: ptr("SN1"), Data: data, NeedsAnalysis: true}
}

func TestSubmitDecision(t *testing.T) {
	c := submitMeasurement{DeviceSN: ptr("SN1"), Data: json.RawMessage(`{"weight":60}`), Now: fixedNow, MeasurementID: 42, PlatformUserID: ptr[int64](5)}
	got, err := decideSubmit(given(t, &sessionState{}, bcaOpened), c)
	then(t, got, err, bcaRecorded(`{"weight":60}`))

	got, err = decideSubmit(given(t, &sessionState{}, bcaOpened, bcaRecorded(`{"weight":61}`)), c)
	then(t, got, err) // recorded: answered again, nothing new

	got, err = decideSubmit(given(t, &sessionState{}), c)
	thenError(t, got, err, domain.ErrSessionNotFound)
	c.Now = bcaOpened.ExpiresAt
	got, err = decideSubmit(given(t, &sessionState{}, bcaOpened), c)
	thenError(t, got, err, domain.ErrSessionExpired)

	c = submitMeasurement{Data: json.RawMessage(`{"spo2":97}`), Now: time.Date(2027, 1, 2, 7, 0, 0, 0, time.FixedZone("CST", 8*3600)), MeasurementID: 7}
	got, err = decideSubmit(given(t, &sessionState{}, catalog.PluginSessionOpened{SessionID: "s2", AppID: 9, ThirdUserID: "u1", ReportType: "spo2", ExpiresAt: c.Now.Add(time.Minute)}), c)
	then(t, got, err, catalog.PluginMeasurementRecorded{PluginMeasurement: catalog.PluginMeasurement{MeasurementNo: "PM2027010100000007", SessionID: "s2", AppID: 9,
		ThirdUserID: ptr("u1"), ReportType: "spo2"}, Data: `{"spo2":97}`}) // numbered by the UTC day, no analysis
}

func TestSubmitRejectsBadInput(t *testing.T) {
	if err := validateSubmit(ptr(strings.Repeat("s", 100)), json.RawMessage(`{}`)); err != nil {
		t.Fatal(err)
	}
	thenInvalid(t, validateSubmit(nil, nil), "data")
	thenInvalid(t, validateSubmit(nil, json.RawMessage(`[1]`)), "data")
	thenInvalid(t, validateSubmit(ptr(strings.Repeat("s", 101)), json.RawMessage(`{}`)), "device_sn")
}

func mockCmd() mockMeasure {
	return mockMeasure{App: pluginApp9, ThirdUserID: "u1", DeviceKey: measureplugin.DeviceMultiBioMonitor, Mode: measureplugin.ModeBloodPressure,
		SessionID: "s3", MeasurementID: 43, Now: fixedNow, Seed: 11}
}

func TestMockMeasureDecision(t *testing.T) {
	got, err := decideMockMeasure(mockCmd())
	if err != nil || len(got) != 2 {
		t.Fatalf("mock decided %v, %v", got, err)
	}
	rec := got[1].(catalog.PluginMeasurementRecorded)
	then(t, got, err,
		catalog.PluginSessionOpened{SessionID: "s3", AppID: 9, ThirdUserID: "u1", DeviceKey: measureplugin.DeviceMultiBioMonitor, MeasureMode: measureplugin.ModeBloodPressure,
			ReportType: "blood_pressure", Gender: "female", BirthDate: "1990-06-15", Height: 165, Weight: 5800, Sandbox: true, ExpiresAt: fixedNow.Add(SessionLifetime)},
		catalog.PluginMeasurementRecorded{PluginMeasurement: catalog.PluginMeasurement{MeasurementNo: "PM2026112100000043", SessionID: "s3", AppID: 9,
			ThirdUserID: ptr("u1"), ReportType: "blood_pressure", DeviceKey: measureplugin.DeviceMultiBioMonitor, MeasureMode: measureplugin.ModeBloodPressure},
			Data: rec.Data, Mock: true})
	var bp struct{ Systolic, Diastolic, Pulse int }
	if err := json.Unmarshal([]byte(rec.Data), &bp); err != nil || bp.Systolic < 105 || bp.Systolic > 130 || bp.Diastolic < 65 || bp.Diastolic > 85 {
		t.Fatalf("implausible mock %s (%v)", rec.Data, err)
	}
	again, _ := decideMockMeasure(mockCmd())
	then(t, again, nil, got...) // the seed decides the numbers
	c := mockCmd()
	c.Seed = 12
	other, _ := decideMockMeasure(c)
	if other[1].(catalog.PluginMeasurementRecorded).Data == rec.Data {
		t.Fatalf("seeds 11 and 12 made the same data %s", rec.Data)
	}

	t.Run("SANDBOX_ONLY", func(t *testing.T) {
		c := mockCmd()
		c.App.Sandbox = false
		c.ThirdUserID = "" // the sandbox is checked first
		got, err := decideMockMeasure(c)
		thenError(t, got, err, domain.ErrSandboxOnly)
	})
	t.Run("bad input", func(t *testing.T) {
		for field, edit := range map[string]func(*mockMeasure){
			"thirdUserId": func(c *mockMeasure) { c.ThirdUserID = "" },
			"deviceKey":   func(c *mockMeasure) { c.DeviceKey = "TOASTER" },
			"measureMode": func(c *mockMeasure) { c.Mode = measureplugin.ModeECG },
		} {
			c := mockCmd()
			edit(&c)
			got, err := decideMockMeasure(c)
			thenInvalid(t, err, field)
			if got != nil {
				t.Fatalf("%s: a refusal decided %v", field, got)
			}
		}
	})
	t.Run("every report type", func(t *testing.T) {
		for _, dm := range [][2]string{{measureplugin.DeviceMultiBioMonitor, measureplugin.ModeBloodGlucose}, {measureplugin.DeviceSpO2Ring, measureplugin.ModeSpO2},
			{measureplugin.DeviceECGRecorder, measureplugin.ModeECG}, {measureplugin.DeviceBodyComposition, measureplugin.ModeBodyComposition}} {
			c := mockCmd()
			c.DeviceKey, c.Mode = dm[0], dm[1]
			got, err := decideMockMeasure(c)
			if err != nil {
				t.Fatal(err)
			}
			rec := got[1].(catalog.PluginMeasurementRecorded)
			if rec.NeedsAnalysis != needsAnalysis(rec.ReportType) || !isObject(json.RawMessage(rec.Data)) {
				t.Fatalf("%s mock: %+v", rec.ReportType, rec)
			}
			if needsAnalysis(rec.ReportType) { // the algorithm step can use it
				st := given(t, &sessionState{}, got...)
				ps, err := decideAnalyze(st, fixedNow)
				if err != nil || len(ps) != 1 || !strings.Contains(ps[0].(catalog.PluginMeasurementAnalyzed).Result, `"status":"ok"`) {
					t.Fatalf("%s mock analysed %v %v", rec.ReportType, ps, err)
				}
			}
		}
	})
}

func result(t *testing.T, m map[string]any) string {
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

func TestAnalyzeDecision(t *testing.T) {
	t.Run("body composition", func(t *testing.T) {
		rec := bcaRecorded(`{"weight":60}`)
		got, err := decideAnalyze(given(t, &sessionState{}, bcaOpened, rec), fixedNow)
		// BMI 60/1.65² = 22.04; age 36; fat 1.2·22.04 + 0.23·36 − 5.4 = 29.3.
		then(t, got, err, catalog.PluginMeasurementAnalyzed{PluginMeasurement: rec.PluginMeasurement, Result: result(t, map[string]any{
			"status": "ok", "method": "deurenberg-1991", "weight_kg": 60, "height_cm": 165, "age": 36, "bmi": 22, "body_fat_percent": 29.3})})

		got, err = decideAnalyze(given(t, &sessionState{}, bcaOpened, rec), time.Date(2026, 6, 14, 0, 0, 0, 0, time.UTC))
		if err != nil || !strings.Contains(got[0].(catalog.PluginMeasurementAnalyzed).Result, `"age":35`) {
			t.Fatalf("the day before the birthday: %v %v", got, err)
		}
		noHeight := bcaOpened
		noHeight.Height = 0
		got, err = decideAnalyze(given(t, &sessionState{}, noHeight, rec), fixedNow)
		then(t, got, err, catalog.PluginMeasurementAnalyzed{PluginMeasurement: rec.PluginMeasurement, Result: result(t, map[string]any{
			"status": "insufficient_data", "method": "deurenberg-1991", "reason": "weight, height and birth_date are required"})})
	})
	t.Run("ECG", func(t *testing.T) {
		opened := catalog.PluginSessionOpened{SessionID: "s4", AppID: 9, ThirdUserID: "u1", ReportType: "ecg", ExpiresAt: fixedNow.Add(SessionLifetime)}
		rec := catalog.PluginMeasurementRecorded{PluginMeasurement: catalog.PluginMeasurement{MeasurementNo: "PM2026112100000044", SessionID: "s4", AppID: 9, ReportType: "ecg"},
			Data: `{"rr_intervals_ms":[800,800,800,100]}`, NeedsAnalysis: true}
		got, err := decideAnalyze(given(t, &sessionState{}, opened, rec), fixedNow)
		then(t, got, err, catalog.PluginMeasurementAnalyzed{PluginMeasurement: rec.PluginMeasurement, Result: result(t, map[string]any{
			"status": "ok", "method": "rr-intervals", "beats": 4, "heart_rate_bpm": 75, "sdnn_ms": 0, "rhythm": "regular"})})

		rec.Data = `{"rr_intervals_ms":[500,1100,500,1100]}` // SDNN 346 of mean 800
		got, err = decideAnalyze(given(t, &sessionState{}, opened, rec), fixedNow)
		if err != nil || !strings.Contains(got[0].(catalog.PluginMeasurementAnalyzed).Result, `"rhythm":"irregular"`) {
			t.Fatalf("irregular rhythm: %v %v", got, err)
		}
		rec.Data = `{"rr_intervals_ms":[800]}`
		got, err = decideAnalyze(given(t, &sessionState{}, opened, rec), fixedNow)
		then(t, got, err, catalog.PluginMeasurementAnalyzed{PluginMeasurement: rec.PluginMeasurement, Result: result(t, map[string]any{
			"status": "insufficient_data", "method": "rr-intervals", "reason": "fewer than 2 usable RR intervals (200-3000 ms)"})})
	})
	t.Run("nothing to analyse", func(t *testing.T) {
		rec := bcaRecorded(`{"weight":60}`)
		done := catalog.PluginMeasurementAnalyzed{PluginMeasurement: rec.PluginMeasurement, Result: `{}`}
		spo2 := rec
		spo2.ReportType, spo2.NeedsAnalysis = "spo2", false
		for name, ps := range map[string][]events.Payload{
			"no session":      nil,
			"no measurement":  {bcaOpened},
			"analysed before": {bcaOpened, rec, done},
			"needs none":      {bcaOpened, spo2},
		} {
			got, err := decideAnalyze(given(t, &sessionState{}, ps...), fixedNow)
			if err != nil || got != nil {
				t.Fatalf("%s: decided %v %v", name, got, err)
			}
		}
	})
}

// device_sn is bounded in characters, as the document and the message say:
// 100 CJK characters (300 bytes) pass, 101 do not.
func TestSubmitCountsDeviceSNInCharacters(t *testing.T) {
	if err := validateSubmit(ptr(strings.Repeat("设", 100)), json.RawMessage(`{}`)); err != nil {
		t.Fatalf("100 CJK characters refused: %v", err)
	}
	thenInvalid(t, validateSubmit(ptr(strings.Repeat("设", 101)), json.RawMessage(`{}`)), "device_sn")
}

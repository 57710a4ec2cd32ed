package catalog

import "time"

// ReportMeta is who and where a measurement was taken, as the uploader says.
type ReportMeta struct {
	PointsCode             *string `json:"points_code"`
	DataSource             *string `json:"data_source"`
	OperatorName           *string `json:"operator_name"`
	OperatorPlatformUserID *int64  `json:"operator_platform_user_id"`
}

// ReportCreated records a measurement report for a user bound to an app.
// RawData and InterpretationDetail hold JSON text exactly as received (a
// JSON string here, because encoding/json would compact an embedded
// RawMessage and escape HTML characters); "" means null.
type ReportCreated struct {
	ReportID             int64      `json:"report_id"`
	AppID                int64      `json:"app_id"`
	OpenUserID           int64      `json:"open_user_id"`
	ChannelUserID        string     `json:"channel_user_id"`
	OpenMemberID         *int64     `json:"open_member_id"`
	RequestReportID      *string    `json:"request_report_id"`
	MeasurementNo        *string    `json:"measurement_no"`
	DeviceSN             *string    `json:"device_sn"`
	ReportType           *string    `json:"report_type"`
	FilePath             *string    `json:"file_path"`
	InterpretationResult *string    `json:"interpretation_result"`
	InterpretationDetail string     `json:"interpretation_detail"`
	InterpretationMethod *string    `json:"interpretation_method"`
	UploadedAt           time.Time  `json:"uploaded_at"`
	ExaminedAt           *time.Time `json:"examined_at"`
	InterpretedAt        *time.Time `json:"interpreted_at"`
	Meta                 ReportMeta `json:"meta"`
	RawData              string     `json:"raw_data"`
	UploadedBy           string     `json:"uploaded_by"`
}

// EventType names the event in the log.
func (ReportCreated) EventType() string { return "report.created" }

// ReportUpdated records a change to a report (re-interpretation): the
// changed fields and the report's values of every patchable field after it.
type ReportUpdated struct {
	ReportID             int64      `json:"report_id"`
	AppID                int64      `json:"app_id"`
	OpenUserID           int64      `json:"open_user_id"`
	ChannelUserID        string     `json:"channel_user_id"`
	Changed              []string   `json:"changed"`
	ReportType           *string    `json:"report_type"`
	FilePath             *string    `json:"file_path"`
	InterpretationResult *string    `json:"interpretation_result"`
	InterpretationDetail string     `json:"interpretation_detail"`
	InterpretationMethod *string    `json:"interpretation_method"`
	InterpretedAt        *time.Time `json:"interpreted_at"`
	UpdatedBy            string     `json:"updated_by"`
}

// EventType names the event in the log.
func (ReportUpdated) EventType() string { return "report.updated" }

// ReportViewed records the owning app's first pull of a report.
type ReportViewed struct {
	ReportID int64 `json:"report_id"`
	AppID    int64 `json:"app_id"`
}

// EventType names the event in the log.
func (ReportViewed) EventType() string { return "report.viewed" }

// UploaderRegistered gives a reporting side (a station network, a wearable
// backend, the plugin backend) its own credential for report ingestion; only
// the token's SHA-256 is kept.
type UploaderRegistered struct {
	UploaderID int64  `json:"uploader_id"`
	Name       string `json:"name"`
	TokenHash  string `json:"token_hash"`
}

// EventType names the event in the log.
func (UploaderRegistered) EventType() string { return "uploader.registered" }

// TokenIssued records an OAuth 2.0 access token; only its SHA-256 is kept.
type TokenIssued struct {
	TokenHash string    `json:"token_hash"`
	AppID     int64     `json:"app_id"`
	Scope     string    `json:"scope"`
	ExpiresAt time.Time `json:"expires_at"`
}

// EventType names the event in the log.
func (TokenIssued) EventType() string { return "oauth.token.issued" }

// TokenRevoked ends a token before it expires (RFC 7009).
type TokenRevoked struct {
	TokenHash string `json:"token_hash"`
	AppID     int64  `json:"app_id"`
}

// EventType names the event in the log.
func (TokenRevoked) EventType() string { return "oauth.token.revoked" }

// PluginNonceClaimed makes a launch nonce single-use: it opens the stream
// plugin-nonce-<app>-<nonce>, which only one session can create.
type PluginNonceClaimed struct {
	AppID     int64  `json:"app_id"`
	Nonce     string `json:"nonce"`
	SessionID string `json:"session_id"`
}

// EventType names the event in the log.
func (PluginNonceClaimed) EventType() string { return "plugin.nonce.claimed" }

// PluginSessionOpened records a verified plugin launch.
type PluginSessionOpened struct {
	SessionID   string    `json:"session_id"`
	AppID       int64     `json:"app_id"`
	ThirdUserID string    `json:"third_user_id"`
	DeviceKey   string    `json:"device_key"`
	MeasureMode string    `json:"measure_mode"`
	ReportType  string    `json:"report_type"`
	Phone       string    `json:"phone,omitempty"`
	Gender      string    `json:"gender,omitempty"`
	BirthDate   string    `json:"birth_date,omitempty"`
	Height      int       `json:"height,omitempty"`
	Weight      int       `json:"weight,omitempty"`
	Metadata    *string   `json:"metadata"`
	Sandbox     bool      `json:"sandbox"`
	ExpiresAt   time.Time `json:"expires_at"`
}

// EventType names the event in the log.
func (PluginSessionOpened) EventType() string { return "plugin.session.opened" }

// PluginMeasurement is what plugin.report.ready needs, carried by both the
// recording and the analysis event so either can render the webhook alone.
type PluginMeasurement struct {
	MeasurementNo  string  `json:"measurement_no"`
	SessionID      string  `json:"session_id"`
	AppID          int64   `json:"app_id"`
	ThirdUserID    *string `json:"third_user_id"`
	PlatformUserID *int64  `json:"platform_user_id"`
	ReportType     string  `json:"report_type"`
	DeviceKey      string  `json:"device_key"`
	MeasureMode    string  `json:"measure_mode"`
	Metadata       *string `json:"metadata"`
}

// PluginMeasurementRecorded stores a measurement as the device produced it
// (Data is JSON text, exact). NeedsAnalysis marks ecg and bca, whose
// plugin.report.ready waits for the algorithm step.
type PluginMeasurementRecorded struct {
	PluginMeasurement
	DeviceSN      *string `json:"device_sn"`
	Data          string  `json:"data"`
	NeedsAnalysis bool    `json:"needs_analysis"`
	Mock          bool    `json:"mock"`
}

// EventType names the event in the log.
func (PluginMeasurementRecorded) EventType() string { return "plugin.measurement.recorded" }

// PluginMeasurementAnalyzed records the algorithm step's result (JSON text).
type PluginMeasurementAnalyzed struct {
	PluginMeasurement
	Result string `json:"result"`
}

// EventType names the event in the log.
func (PluginMeasurementAnalyzed) EventType() string { return "plugin.measurement.analyzed" }

// ReportKeyClaimed maps an uploader's report number to a report id, once,
// so a retried upload finds the report instead of creating a second one.
type ReportKeyClaimed struct {
	Uploader        string `json:"uploader"`
	RequestReportID string `json:"request_report_id"`
	ReportID        int64  `json:"report_id"`
}

// EventType names the event in the log.
func (ReportKeyClaimed) EventType() string { return "report.key_claimed" }

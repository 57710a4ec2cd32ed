package commands

import (
	"testing"

	"github.com/healthtech/partner-open-platform/domain"
	"github.com/healthtech/partner-open-platform/events/catalog"
)

// Given/When/Then of the plugin session checks.

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

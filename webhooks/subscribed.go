package webhooks

// Subscribed reports whether an app's subscription takes an event: exact
// names, prefix wildcards such as health.report.*, or no selection for all.
func Subscribed(subscription []string, event string) bool {
	if len(subscription) == 0 {
		return true
	}
	for _, s := range subscription {
		if s == event || s == "*" {
			return true
		}
		if prefix, ok := cutWildcard(s); ok && len(event) > len(prefix) && event[:len(prefix)] == prefix {
			return true
		}
	}
	return false
}

// cutWildcard turns "health.report.*" into "health.report.".
func cutWildcard(s string) (string, bool) {
	if len(s) >= 2 && s[len(s)-2:] == ".*" {
		return s[:len(s)-1], true
	}
	return "", false
}

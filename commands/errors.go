// Package commands is the write side: each command loads its aggregate from
// its stream, decides, and appends with the revision it loaded. Nothing here
// reads a read model, so uniqueness and invariants hold on every event store.
package commands

import (
	"errors"
	"sort"
	"strings"
)

// Domain errors. The HTTP edge maps each to the spec's code in one table.
var (
	ErrUserNotFound        = errors.New("user not found")
	ErrFamilyGroupNotFound = errors.New("family group not found")
	ErrMemberNotFound      = errors.New("family member not found")
	ErrInvalidAppGroupID   = errors.New("family member refers to an app_group_id not in family_groups")
	ErrAppNotFound         = errors.New("app not found")
	// ErrContention means the aggregate kept changing under us; the caller may retry.
	ErrContention = errors.New("too many concurrent writes to the same resource, retry")
)

// ValidationError lists every bad field of a request, keyed by field path
// (user.phone, family_members[0].height), so a partner fixes them in one go.
type ValidationError struct {
	Fields map[string][]string
}

// Add records a problem with one field.
func (v *ValidationError) Add(field, msg string) {
	if v.Fields == nil {
		v.Fields = map[string][]string{}
	}
	v.Fields[field] = append(v.Fields[field], msg)
}

// Empty reports whether no problem was recorded.
func (v *ValidationError) Empty() bool { return v == nil || len(v.Fields) == 0 }

// Err returns v as an error, or nil when nothing was recorded.
func (v *ValidationError) Err() error {
	if v.Empty() {
		return nil
	}
	return v
}

func (v *ValidationError) Error() string {
	keys := make([]string, 0, len(v.Fields))
	for k := range v.Fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+": "+strings.Join(v.Fields[k], "; "))
	}
	return "validation failed: " + strings.Join(parts, ", ")
}

// Has reports whether a problem is already recorded for the field.
func (v *ValidationError) Has(field string) bool {
	if v == nil {
		return false
	}
	_, ok := v.Fields[field]
	return ok
}

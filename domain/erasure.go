package domain

import (
	"strconv"
	"strings"
)

// ErasureAcknowledgePath is the partner route that acknowledges the
// erasure of openUserID: an erasure is named by the erased person's
// open_user_id (a person is erased once and ids are never reused). The
// user.erased webhook repeats it.
func ErasureAcknowledgePath(openUserID int64) string {
	return "/open/v1/erasures/" + strconv.FormatInt(openUserID, 10) + "/acknowledge"
}

// UserStreamID is the open_user_id a user stream names (UserStream's
// inverse); false for any other stream.
func UserStreamID(stream string) (int64, bool) {
	s, ok := strings.CutPrefix(stream, "user-")
	if !ok {
		return 0, false
	}
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 || UserStream(id) != stream {
		return 0, false
	}
	return id, true
}

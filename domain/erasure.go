package domain

import "strconv"

// ErasureAcknowledgePath is the partner route that acknowledges the
// erasure of openUserID: an erasure is named by the erased person's
// open_user_id (a person is erased once and ids are never reused). The
// user.erased webhook repeats it.
func ErasureAcknowledgePath(openUserID int64) string {
	return "/open/v1/erasures/" + strconv.FormatInt(openUserID, 10) + "/acknowledge"
}

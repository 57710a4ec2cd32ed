package domain

import "crypto/sha256"

// ChannelUser is the pseudonym of (appID, channelUserID) alone, as the
// binding stream's name ends.
func (p *Pseudonyms) ChannelUser(appID int64, channelUserID string) string {
	var b [2 * sha256.Size]byte
	return string(p.appendChannelUser(b[:0], appID, channelUserID))
}

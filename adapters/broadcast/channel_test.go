package broadcast

import (
	"strings"
	"testing"

	"github.com/threadengine/engine/ports"
)

// Channel names stay within PostgreSQL's 63 bytes, and distinct schemas keep
// distinct names.
func TestChannelPrefixFitsPostgres(t *testing.T) {
	short := channelPrefix("public")
	if short != "threadengine_public_" {
		t.Fatalf("short schema: %q", short)
	}
	a, b := channelPrefix(strings.Repeat("a", 60)), channelPrefix(strings.Repeat("a", 59)+"b")
	for _, p := range []string{a, b} {
		for _, c := range []string{ports.ChannelNotifications, ports.ChannelIdentity, "ack"} {
			if len(p+c) > 63 {
				t.Fatalf("channel %q is %d bytes", p+c, len(p+c))
			}
		}
	}
	if a == b {
		t.Fatalf("two long schemas share %q", a)
	}
}

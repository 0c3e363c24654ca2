package config

import (
	"strings"
	"testing"
	"time"
)

// notifications.settled_retention: 24 h by default, read from the
// environment, refused below a minute.
func TestNotificationsSettledRetention(t *testing.T) {
	c, err := Load("", nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Notifications.SettledRetention != 24*time.Hour {
		t.Fatalf("default %v, want 24h", c.Notifications.SettledRetention)
	}
	c, err = Load("", []string{"THREADENGINE_NOTIFICATIONS__SETTLED_RETENTION=168h"})
	if err != nil || c.Notifications.SettledRetention != 168*time.Hour {
		t.Fatalf("from the environment: %v %v", c.Notifications.SettledRetention, err)
	}
	if _, err := Load("", []string{"THREADENGINE_NOTIFICATIONS__SETTLED_RETENTION=30s"}); err == nil ||
		!strings.Contains(err.Error(), "notifications.settled_retention") {
		t.Fatalf("30s: %v, want an error naming notifications.settled_retention", err)
	}
}

package abuse

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/threadengine/engine/adapters/sqldb"
)

// code is the "code" member of a problem+json body.
func code(b []byte) string {
	var p struct {
		Code string `json:"code"`
	}
	_ = json.Unmarshal(b, &p)
	return p.Code
}

func exchange(t *testing.T, e *engine, key, xff string) (int, []byte) {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"api_key": key})
	if xff == "" {
		return e.do(t, http.MethodPost, "/auth/api-key/exchange", "", bytes.NewReader(body))
	}
	return e.do(t, http.MethodPost, "/auth/api-key/exchange", "", bytes.NewReader(body), "X-Forwarded-For", xff)
}

// TestSignInThrottle replays issue 14 point 6: an attacker's failed
// exchanges must not lock valid keys out, X-Forwarded-For counts only from
// a trusted proxy, and the attacker gets 429 rate_limited.
func TestSignInThrottle(t *testing.T) {
	t.Parallel()
	const guess = "td_guessguessguessguessguessguessguessguessgu"
	t.Run("direct", func(t *testing.T) {
		t.Parallel()
		e := start(t, sqldb.SQLite)
		w := e.during(t, nil)
		// Rotating X-Forwarded-For does not escape the throttle: no proxy is trusted.
		last := 0
		var lastBody []byte
		for i := 0; i < 30; i++ {
			last, lastBody = exchange(t, e, guess, fmt.Sprintf("203.0.113.%d", i))
		}
		if last != http.StatusTooManyRequests || code(lastBody) != "rate_limited" {
			t.Errorf("30th failure: %d %s, want 429 rate_limited", last, lastBody)
		}
		if st, b := exchange(t, e, e.AdminKey, ""); st != http.StatusOK {
			t.Errorf("valid key from the attacker's address: %d %s", st, b)
		}
		w.check(t, "sign-in throttle, direct")
	})
	t.Run("behind a trusted proxy", func(t *testing.T) {
		t.Parallel()
		e := start(t, sqldb.SQLite, "THREADENGINE_SERVER__TRUSTED_PROXIES=127.0.0.1/32")
		w := e.during(t, nil)
		for i := 0; i < 25; i++ {
			exchange(t, e, guess, "203.0.113.9")
		}
		if st, b := exchange(t, e, guess, "203.0.113.9"); st != http.StatusTooManyRequests {
			t.Errorf("attacker behind the proxy: %d %s, want 429", st, b)
		}
		// Another client behind the same proxy, even with a key of the same
		// prefix, is its own bucket; a valid key always passes.
		if st, b := exchange(t, e, guess, "198.51.100.7"); st != http.StatusUnauthorized {
			t.Errorf("other client's failure: %d %s, want 401", st, b)
		}
		if st, b := exchange(t, e, e.AdminKey, "203.0.113.9"); st != http.StatusOK {
			t.Errorf("valid key from the attacker's address: %d %s", st, b)
		}
		w.check(t, "sign-in throttle, trusted proxy")
	})
}

package domain

import (
	"testing"
	"time"
)

// The Standard Webhooks specification's published test vector.
func TestSignWebhookStandardVector(t *testing.T) {
	t.Parallel()
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	ts := time.Unix(1614265330, 0)
	body := []byte(`{"test": 2432232314}`)
	got, err := SignWebhook(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", ts, body)
	if err != nil || got != "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=" {
		t.Fatalf("SignWebhook = %q, %v", got, err)
	}
	hdr := "v1,bm9wZQ== " + got
	if !VerifyWebhook(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", ts, ts.Add(time.Minute), body, hdr, 5*time.Minute) {
		t.Fatal("VerifyWebhook refused the vector")
	}
	for name, ok := range map[string]bool{
		"other body":  VerifyWebhook(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", ts, ts, []byte(`{"test": 2432232315}`), got, time.Minute),
		"other id":    VerifyWebhook(secret, "msg_other", ts, ts, body, got, time.Minute),
		"too old":     VerifyWebhook(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", ts, ts.Add(10*time.Minute), body, got, 5*time.Minute),
		"other key":   VerifyWebhook(NewWebhookSecret([]byte("0123456789abcdef0123456789abcdef")), "msg_p5jXN8AQM9LWM0D4loKWxJek", ts, ts, body, got, time.Minute),
		"bad secret":  VerifyWebhook("whsec_!!", "msg_p5jXN8AQM9LWM0D4loKWxJek", ts, ts, body, got, time.Minute),
		"v2 prefixed": VerifyWebhook(secret, "msg_p5jXN8AQM9LWM0D4loKWxJek", ts, ts, body, "v2,"+got[3:], time.Minute),
	} {
		if ok {
			t.Errorf("%s: verified", name)
		}
	}
}

func TestWebhookRetrySchedule(t *testing.T) {
	t.Parallel()
	r := WebhookRetry{Base: 10 * time.Second, Max: time.Hour, MaxAttempts: 8}
	cases := []struct {
		attempt int
		jitter  float64
		want    time.Duration
		ok      bool
	}{
		{1, 0, 10 * time.Second, true},
		{2, 0, 20 * time.Second, true},
		{3, 0.999999, 20*time.Second + 20*time.Microsecond, true},
		{4, 1, 40 * time.Second, true},
		{7, 0, 640 * time.Second, true},
		{8, 0, 0, false},
		{9, 0, 0, false},
	}
	for _, c := range cases {
		got, ok := r.Next(c.attempt, c.jitter)
		if ok != c.ok || (c.ok && (got < c.want-time.Millisecond || got > c.want+time.Millisecond)) {
			t.Errorf("Next(%d, %v) = %v, %v; want %v, %v", c.attempt, c.jitter, got, ok, c.want, c.ok)
		}
	}
	capped := WebhookRetry{Base: time.Minute, Max: 5 * time.Minute, MaxAttempts: 100}
	if got, _ := capped.Next(60, 0); got != 5*time.Minute {
		t.Errorf("capped Next(60) = %v", got)
	}
}

func TestCheckWebhookURL(t *testing.T) {
	t.Parallel()
	cases := []struct {
		url   string
		allow []string
		code  Code
	}{
		{"https://hooks.slack.com/services/x", nil, ""},
		{"http://127.0.0.1:9000/hook", nil, ""},
		{"ftp://example.com/x", nil, CodeWebhookURLInvalid},
		{"file:///etc/passwd", nil, CodeWebhookURLInvalid},
		{"javascript:alert(1)", nil, CodeWebhookURLInvalid},
		{"/relative", nil, CodeWebhookURLInvalid},
		{"", nil, CodeWebhookURLInvalid},
		{"https://user:pw@example.com/", nil, CodeWebhookURLInvalid},
		{"https://hooks.slack.com/x", []string{"*.slack.com"}, ""},
		{"https://slack.com/x", []string{"*.slack.com"}, CodeWebhookURLNotAllowed},
		{"https://Alerts.Example.com/x", []string{"alerts.example.com"}, ""},
		{"http://169.254.169.254/latest", []string{"alerts.example.com"}, CodeWebhookURLNotAllowed},
	}
	for _, c := range cases {
		_, err := CheckWebhookURL(c.url, c.allow)
		if got := CodeOf(err); (c.code == "" && err != nil) || (c.code != "" && got != c.code) {
			t.Errorf("CheckWebhookURL(%q, %v) = %v; want code %q", c.url, c.allow, err, c.code)
		}
	}
}

func TestAlertOfAndMasks(t *testing.T) {
	t.Parallel()
	cases := []struct {
		typ, violation, severity string
		event                    WebhookEvent
		rank                     int
		ok                       bool
	}{
		{"execution.failed", "", "warning", EventStepFailed, 0, true},
		{"execution.success", "", "info", "", 0, false},
		{"thread.failed", "", "info", EventThreadFailed, 0, true},
		{"thread.completed", "", "info", "", 0, false},
		{"validation.violated", "invalid_transition", "critical", EventValidationViolated, 1, true},
		{"validation.violated", "missing_optional_field", "minor", EventValidationViolated, 3, true},
		{"validation.violated", IssueMaxDurationExceeded, "major", EventThreadOverdue, 0, true},
		{"validation.violated", IssueThreadSilent, "warning", EventThreadSilent, 0, true},
		{"validation.passed", "", "info", "", 0, false},
	}
	for _, c := range cases {
		e, r, ok := AlertOf(c.typ, c.violation, c.severity)
		if e != c.event || r != c.rank || ok != c.ok {
			t.Errorf("AlertOf(%q, %q, %q) = %q, %d, %v", c.typ, c.violation, c.severity, e, r, ok)
		}
	}
	m := EventMask([]WebhookEvent{EventThreadSilent, EventStepFailed})
	if got := EventsOfMask(m); len(got) != 2 || got[0] != EventStepFailed || got[1] != EventThreadSilent {
		t.Errorf("EventsOfMask(%d) = %v", m, got)
	}
	if EventWebhookTest.Bit() != 0 || SeverityCritical.Rank() != 1 || SeverityInfo.Rank() != 5 {
		t.Error("bits or ranks changed")
	}
	if _, err := ParseWebhookEvent("thread.completed"); CodeOf(err) != CodeValidationFailed {
		t.Errorf("ParseWebhookEvent accepted thread.completed: %v", err)
	}
}

func TestSlackText(t *testing.T) {
	t.Parallel()
	got := SlackText(WebhookPayload{Type: EventValidationViolated, Data: WebhookPayloadData{ThreadID: "t1",
		ContractName: "order", Severity: "critical", Message: "Step 'pay' is not an entry point"}})
	want := "[threadengine] validation.violated (critical): Step 'pay' is not an entry point — contract order, thread t1"
	if got != want {
		t.Errorf("SlackText = %q", got)
	}
}

package domain

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// WebhookEvent is one kind of alert a webhook can subscribe to.
type WebhookEvent string

const (
	// EventStepFailed: a step attempt was recorded as failed or error.
	EventStepFailed WebhookEvent = "step.failed"
	// EventValidationViolated: a step's validation found an issue at least as
	// severe as the webhook's minimum severity.
	EventValidationViolated WebhookEvent = "validation.violated"
	// EventThreadFailed: a thread ended failed.
	EventThreadFailed WebhookEvent = "thread.failed"
	// EventThreadOverdue: an active thread ran past its contract's
	// max_duration (found by the alert sweep).
	EventThreadOverdue WebhookEvent = "thread.overdue"
	// EventThreadSilent: an active thread had no update for
	// alerts.silent_after (found by the alert sweep).
	EventThreadSilent WebhookEvent = "thread.silent"
	// EventWebhookTest is what "send test" delivers; no subscription needed.
	EventWebhookTest WebhookEvent = "webhook.test"
)

// WebhookEvents lists every event a webhook may subscribe to, in the order
// the API and the UI list them.
var WebhookEvents = []WebhookEvent{EventStepFailed, EventValidationViolated, EventThreadFailed, EventThreadOverdue, EventThreadSilent}

// Bit is the event's bit in a webhook's event mask (stored, so the
// notification insert can select matching webhooks in SQL).
func (e WebhookEvent) Bit() int {
	for i, x := range WebhookEvents {
		if x == e {
			return 1 << i
		}
	}
	return 0
}

// ParseWebhookEvent accepts exactly the names of WebhookEvents.
func ParseWebhookEvent(s string) (WebhookEvent, error) {
	for _, e := range WebhookEvents {
		if string(e) == s {
			return e, nil
		}
	}
	names := make([]string, len(WebhookEvents))
	for i, e := range WebhookEvents {
		names[i] = string(e)
	}
	return "", Invalid("events", "unknown event %q: must be one of %s", s, strings.Join(names, ", "))
}

// EventMask folds events into the stored bit mask.
func EventMask(events []WebhookEvent) int {
	m := 0
	for _, e := range events {
		m |= e.Bit()
	}
	return m
}

// EventsOfMask is the inverse of EventMask, in WebhookEvents order.
func EventsOfMask(mask int) []WebhookEvent {
	out := []WebhookEvent{}
	for _, e := range WebhookEvents {
		if mask&e.Bit() != 0 {
			out = append(out, e)
		}
	}
	return out
}

// Rank orders severities: 1 for critical up to 5 for info (0: unknown). An
// issue matches a webhook's minimum severity when its rank is at most the
// minimum's rank.
func (s Severity) Rank() int {
	for i, x := range Severities {
		if x == s {
			return i + 1
		}
	}
	return 0
}

// WebhookFormat is the body a webhook receives.
type WebhookFormat string

const (
	// FormatStandard is the JSON event of docs/operators/alerts.md, signed
	// per the Standard Webhooks specification.
	FormatStandard WebhookFormat = "standard"
	// FormatSlack is {"text": "..."}, what Slack (and Mattermost, Discord's
	// /slack endpoints, …) incoming webhooks accept; signed the same way.
	FormatSlack WebhookFormat = "slack"
)

// ParseWebhookFormat accepts standard and slack ("" is standard).
func ParseWebhookFormat(s string) (WebhookFormat, error) {
	switch WebhookFormat(s) {
	case "", FormatStandard:
		return FormatStandard, nil
	case FormatSlack:
		return FormatSlack, nil
	}
	return "", Invalid("format", "format must be standard or slack, not %q", s)
}

// Webhook limits.
const (
	MaxWebhookNameLen = 200
	MaxWebhookURLLen  = 2048
)

// CheckWebhookURL refuses what the engine will not post to: anything but an
// absolute http(s) URL with a host, URLs carrying credentials, and, when
// allow is not empty, hosts not on it (exact host names, or "*.example.com"
// for any subdomain).
func CheckWebhookURL(raw string, allow []string) (*url.URL, error) {
	if raw == "" || len(raw) > MaxWebhookURLLen {
		return nil, E(KindInvalid, CodeWebhookURLInvalid, "url must be an http or https URL of at most %d bytes", MaxWebhookURLLen).WithField("url")
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" || u.Opaque != "" {
		return nil, E(KindInvalid, CodeWebhookURLInvalid, "url must be an absolute http or https URL").WithField("url")
	}
	if u.User != nil {
		return nil, E(KindInvalid, CodeWebhookURLInvalid, "url must not carry credentials; the payload is signed instead").WithField("url")
	}
	if len(allow) > 0 && !HostAllowed(u.Hostname(), allow) {
		return nil, E(KindInvalid, CodeWebhookURLNotAllowed, "host %q is not in alerts.allowed_hosts", u.Hostname()).WithField("url")
	}
	return u, nil
}

// HostAllowed reports whether host is on the allow-list (case-insensitive;
// "*.example.com" matches every subdomain of example.com, not example.com).
func HostAllowed(host string, allow []string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for _, a := range allow {
		a = strings.ToLower(strings.TrimSpace(a))
		if suffix, ok := strings.CutPrefix(a, "*."); ok {
			if strings.HasSuffix(host, "."+suffix) {
				return true
			}
		} else if host == a {
			return true
		}
	}
	return false
}

// WebhookSecretPrefix starts every webhook secret (Standard Webhooks).
const WebhookSecretPrefix = "whsec_"

// NewWebhookSecret formats key (24 to 64 random bytes) as a secret.
func NewWebhookSecret(key []byte) string {
	return WebhookSecretPrefix + base64.StdEncoding.EncodeToString(key)
}

// webhookKey decodes a whsec_ secret (the prefix is optional).
func webhookKey(secret string) ([]byte, error) {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, WebhookSecretPrefix))
	if err != nil || len(key) == 0 {
		return nil, fmt.Errorf("webhook secret is not base64")
	}
	return key, nil
}

// SignWebhook is the Standard Webhooks signature of one message: "v1," and
// the base64 HMAC-SHA256, keyed by the secret's bytes, of
// "<msgID>.<unix seconds>.<body>".
func SignWebhook(secret, msgID string, ts time.Time, body []byte) (string, error) {
	key, err := webhookKey(secret)
	if err != nil {
		return "", err
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(msgID + "." + strconv.FormatInt(ts.Unix(), 10) + "."))
	m.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(m.Sum(nil)), nil
}

// VerifyWebhook checks a webhook-signature header (space-separated
// "v1,<sig>" entries) against the message, and that ts is within tolerance
// of now. Receivers do the same; the engine's tests use it.
func VerifyWebhook(secret, msgID string, ts, now time.Time, body []byte, header string, tolerance time.Duration) bool {
	if d := now.Sub(ts); d > tolerance || d < -tolerance {
		return false
	}
	want, err := SignWebhook(secret, msgID, ts, body)
	if err != nil {
		return false
	}
	for _, s := range strings.Fields(header) {
		if hmac.Equal([]byte(s), []byte(want)) {
			return true
		}
	}
	return false
}

// WebhookRetry is the delivery schedule: attempt n (1-based) that failed is
// retried after Base·2^(n-1), at most Max, jittered down by up to half;
// after MaxAttempts attempts the delivery is given up.
type WebhookRetry struct {
	Base, Max   time.Duration
	MaxAttempts int
}

// Next returns the wait before the attempt after attempt (1-based) and
// false when no attempt is left. jitter in [0,1) comes from the caller (the
// schedule stays pure): the wait is d·(1 - jitter/2), spreading retries of
// many deliveries that failed together.
func (r WebhookRetry) Next(attempt int, jitter float64) (time.Duration, bool) {
	if attempt >= r.MaxAttempts {
		return 0, false
	}
	d := float64(r.Base) * math.Pow(2, float64(max(attempt, 1)-1))
	if d > float64(r.Max) || math.IsInf(d, 0) {
		d = float64(r.Max)
	}
	jitter = min(max(jitter, 0), 1)
	return time.Duration(d * (1 - jitter/2)), true
}

// AlertOf says which webhook event a stored notification is, with the
// severity rank webhooks filter on (0 when the event has no severity).
// Notifications no webhook event covers return false.
func AlertOf(notificationType, violationType, severity string) (WebhookEvent, int, bool) {
	switch notificationType {
	case "execution.failed":
		return EventStepFailed, 0, true
	case "thread.failed":
		return EventThreadFailed, 0, true
	case "validation.violated":
		switch violationType {
		case IssueMaxDurationExceeded:
			return EventThreadOverdue, 0, true
		case IssueThreadSilent:
			return EventThreadSilent, 0, true
		}
		r := Severity(severity).Rank()
		if r == 0 {
			return "", 0, false
		}
		return EventValidationViolated, r, true
	}
	return "", 0, false
}

// IssueThreadSilent is the issue the alert sweep records on an active
// thread without an update for alerts.silent_after.
const IssueThreadSilent = "thread_silent"

// RuleSilentAfter names the engine setting a thread_silent issue comes from.
const RuleSilentAfter = "alerts.silent_after"

// Alert conditions the sweep records at most once per thread.
const (
	AlertOverdue = "overdue"
	AlertSilent  = "silent"
)

// OverdueIssue is the issue recorded on a thread past its contract's
// max_duration (the same type and severity as the step-time check).
func OverdueIssue(elapsed, maxDuration time.Duration) ValidationIssue {
	return ValidationIssue{Type: IssueMaxDurationExceeded, Severity: SeverityMajor, Rule: RuleMaxDuration,
		Message:  fmt.Sprintf("Thread has run for %s, longer than the contract's max_duration of %s", roundDur(elapsed), maxDuration),
		Expected: maxDuration.String(), Actual: roundDur(elapsed).String()}
}

// SilentIssue is the issue recorded on an active thread without an update
// for silentAfter (a warning: silence is suspicious, not a contract breach).
func SilentIssue(silence, silentAfter time.Duration) ValidationIssue {
	return ValidationIssue{Type: IssueThreadSilent, Severity: SeverityWarning, Rule: RuleSilentAfter,
		Message:  fmt.Sprintf("Thread has had no update for %s (alerts.silent_after is %s)", roundDur(silence), silentAfter),
		Expected: silentAfter.String(), Actual: roundDur(silence).String()}
}

// WebhookPayload is the JSON body of a standard-format delivery.
type WebhookPayload struct {
	Type      WebhookEvent       `json:"type"`
	Timestamp time.Time          `json:"timestamp"`
	Data      WebhookPayloadData `json:"data"`
}

// WebhookPayloadData describes the thread event behind an alert.
type WebhookPayloadData struct {
	ThreadID       string `json:"thread_id,omitempty"`
	ContractName   string `json:"contract_name,omitempty"`
	StepName       string `json:"step_name,omitempty"`
	StepID         string `json:"step_id,omitempty"`
	StepStatus     string `json:"step_status,omitempty"`
	Severity       string `json:"severity,omitempty"`
	ViolationType  string `json:"violation_type,omitempty"`
	Message        string `json:"message"`
	NotificationID string `json:"notification_id,omitempty"`
	// URL links to the thread in the engine's UI (when the engine URL is known).
	URL string `json:"url,omitempty"`
}

// ThreadPageURL is the address of a thread's page in the web UI of the
// engine at engineURL (its public URL, proxy prefix included).
func ThreadPageURL(engineURL, threadID string) string {
	return strings.TrimSuffix(engineURL, "/") + "/ui/threads/" + url.PathEscape(threadID)
}

// SlackText is the one line a slack-format delivery carries.
func SlackText(p WebhookPayload) string {
	var b strings.Builder
	b.WriteString("[threadengine] ")
	b.WriteString(string(p.Type))
	if p.Data.Severity != "" && p.Type == EventValidationViolated {
		b.WriteString(" (" + p.Data.Severity + ")")
	}
	b.WriteString(": ")
	b.WriteString(p.Data.Message)
	if p.Data.ContractName != "" {
		b.WriteString(" — contract " + p.Data.ContractName)
	}
	if p.Data.ThreadID != "" {
		b.WriteString(", thread " + p.Data.ThreadID)
	}
	if p.Data.URL != "" {
		b.WriteString(" " + p.Data.URL)
	}
	return b.String()
}

// Package classifier is the classifier port's adapter for an
// OpenAI-compatible chat-completions endpoint (OpenAI, Azure-style
// gateways, vLLM, Ollama, llama.cpp servers): one POST per question, the
// model told to answer with a JSON object {"label", "probability"}.
package classifier

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// Config is contracts.classifier.
type Config struct {
	URL     string
	Model   string
	Key     string
	Timeout time.Duration
}

// maxResponse bounds the body read from the endpoint.
const maxResponse = 1 << 20

// Client asks an OpenAI-compatible chat-completions endpoint.
type Client struct {
	url, model, key string
	timeout         time.Duration
	http            *http.Client
}

var _ ports.Classifier = (*Client)(nil)

// New returns the client, or nil when cfg has no URL (no classifier). hc
// nil uses a client of its own.
func New(cfg Config, hc *http.Client) *Client {
	if cfg.URL == "" {
		return nil
	}
	u := strings.TrimSuffix(cfg.URL, "/")
	if !strings.HasSuffix(u, "/chat/completions") {
		u += "/chat/completions"
	}
	if hc == nil {
		hc = &http.Client{}
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	return &Client{url: u, model: cfg.Model, key: cfg.Key, timeout: cfg.Timeout, http: hc}
}

const system = "You are a strict classifier inside a workflow engine. You receive a task, the list of allowed labels " +
	"and a JSON state. Choose exactly one label from the list. Reply with only a JSON object " +
	`{"label": "<one of the labels>", "probability": <your probability that this label is right, 0 to 1>}` +
	" and nothing else."

type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatRequest struct {
	Model       string        `json:"model"`
	Messages    []chatMessage `json:"messages"`
	Temperature float64       `json:"temperature"`
}

type chatResponse struct {
	Choices []struct {
		Message struct {
			Content string `json:"content"`
		} `json:"message"`
	} `json:"choices"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

type answer struct {
	Label       *string  `json:"label"`
	Probability *float64 `json:"probability"`
}

// Classify puts q to the endpoint. Every failure is a classifier_unavailable
// error saying what went wrong (timeout, status, unreadable answer, a label
// not offered), never the key.
func (c *Client) Classify(ctx context.Context, q ports.ClassifyRequest) (ports.ClassifyAnswer, error) {
	user, err := json.Marshal(map[string]any{"task": q.Task, "labels": q.Labels, "state": q.State})
	if err != nil {
		return ports.ClassifyAnswer{}, unavailable("cannot encode the question: %v", err)
	}
	body, _ := json.Marshal(chatRequest{Model: c.model, Temperature: 0,
		Messages: []chatMessage{{Role: "system", Content: system}, {Role: "user", Content: string(user)}}})
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return ports.ClassifyAnswer{}, unavailable("bad endpoint: %v", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return ports.ClassifyAnswer{}, unavailable("the classifier did not answer within %s", c.timeout)
		}
		return ports.ClassifyAnswer{}, unavailable("the classifier could not be reached")
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse+1))
	if err != nil {
		if ctx.Err() != nil {
			return ports.ClassifyAnswer{}, unavailable("the classifier did not answer within %s", c.timeout)
		}
		return ports.ClassifyAnswer{}, unavailable("the classifier's answer could not be read")
	}
	if len(raw) > maxResponse {
		return ports.ClassifyAnswer{}, unavailable("the classifier's answer is larger than %d bytes", maxResponse)
	}
	var cr chatResponse
	jerr := json.Unmarshal(raw, &cr)
	if resp.StatusCode/100 != 2 {
		// The provider's own message stays in the cause, for the engine's
		// log only: a 401's says "Incorrect API key provided: sk-…abcd",
		// and callers of can/should or a refused step must not read it.
		e := domain.E(domain.KindUnavailable, domain.CodeClassifierUnavailable, "the classifier answered HTTP %d", resp.StatusCode)
		if jerr == nil && cr.Error != nil && cr.Error.Message != "" {
			e = e.WithCause(errors.New(truncate(cr.Error.Message, 200)))
		}
		return ports.ClassifyAnswer{}, e
	}
	if jerr != nil || len(cr.Choices) == 0 {
		return ports.ClassifyAnswer{}, unavailable("the classifier's answer is not a chat completion")
	}
	return parseAnswer(cr.Choices[0].Message.Content, q.Labels)
}

// parseAnswer reads the model's JSON object, also inside a Markdown code
// fence, and checks it names an offered label with a probability in 0..1.
func parseAnswer(content string, labels []string) (ports.ClassifyAnswer, error) {
	s := strings.TrimSpace(content)
	if i, j := strings.Index(s, "{"), strings.LastIndex(s, "}"); i >= 0 && j > i {
		s = s[i : j+1]
	}
	var a answer
	if err := json.Unmarshal([]byte(s), &a); err != nil || a.Label == nil || a.Probability == nil {
		return ports.ClassifyAnswer{}, unavailable("the classifier's answer is not {\"label\", \"probability\"}: %q", truncate(content, 120))
	}
	label := strings.TrimSpace(*a.Label)
	p := *a.Probability
	if p < 0 || p > 1 {
		return ports.ClassifyAnswer{}, unavailable("the classifier's probability %v is not between 0 and 1", p)
	}
	for _, l := range labels {
		if strings.EqualFold(l, label) {
			return ports.ClassifyAnswer{Label: l, Probability: p}, nil
		}
	}
	return ports.ClassifyAnswer{}, unavailable("the classifier answered %q, which is not one of %s", truncate(label, 60), strings.Join(labels, ", "))
}

func unavailable(format string, args ...any) error {
	return domain.E(domain.KindUnavailable, domain.CodeClassifierUnavailable, "%s", fmt.Sprintf(format, args...))
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

package config

import (
	"fmt"
	"time"
)

// Threads configures the thread use cases.
type Threads struct {
	// InvitationMaxTTL bounds an inviteParty's expiresIn (default 30d, as
	// the Node SDK documents; "30d" is accepted in every source).
	InvitationMaxTTL time.Duration `koanf:"invitation_max_ttl"`
}

// Contracts configures contract judging.
type Contracts struct {
	// Classifier answers semantic rules ("must satisfy question"), goals of
	// can and should's advice; without a URL there is none.
	Classifier Classifier `koanf:"classifier"`
}

// Classifier is an OpenAI-compatible chat-completions endpoint.
type Classifier struct {
	// URL is the endpoint: a base such as https://api.openai.com/v1 (then
	// /chat/completions is appended) or the full …/chat/completions URL.
	URL string `koanf:"url"`
	// Model is sent as "model" (required with URL).
	Model string `koanf:"model"`
	// Key, when set, is sent as "Authorization: Bearer <key>".
	Key string `koanf:"key"`
	// Timeout bounds one classification (default 10s).
	Timeout time.Duration `koanf:"timeout"`
}

// sectionKeys are the keys of the threads, contracts and transparency
// sections (transparency.witnesses is a list: one key).
var sectionKeys = map[string]bool{
	"threads.invitation_max_ttl": true,
	"transparency.origin":        true, "transparency.checkpoint_interval": true, "transparency.witnesses": true,
	"contracts.classifier.url": true, "contracts.classifier.model": true,
	"contracts.classifier.key": true, "contracts.classifier.timeout": true,
}

func defaultThreads() Threads { return Threads{InvitationMaxTTL: 30 * 24 * time.Hour} }

func defaultContracts() Contracts {
	return Contracts{Classifier: Classifier{Timeout: 10 * time.Second}}
}

func (t Threads) validate() error {
	if t.InvitationMaxTTL < time.Minute || t.InvitationMaxTTL > 366*24*time.Hour {
		return fmt.Errorf("config: threads.invitation_max_ttl must be between 1m and 366d")
	}
	return nil
}

func (c *Contracts) validate() error {
	cl := &c.Classifier
	if cl.Timeout <= 0 || cl.Timeout > 5*time.Minute {
		return fmt.Errorf("config: contracts.classifier.timeout must be between 1ms and 5m")
	}
	if cl.URL == "" {
		if cl.Model != "" || cl.Key != "" {
			return fmt.Errorf("config: contracts.classifier.url is required when contracts.classifier.model or key is set")
		}
		return nil
	}
	if _, err := checkHTTPURL(cl.URL, true); err != nil {
		return fmt.Errorf("config: contracts.classifier.url: %w", err)
	}
	if cl.Model == "" {
		return fmt.Errorf("config: contracts.classifier.model is required with contracts.classifier.url")
	}
	return nil
}

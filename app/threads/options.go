package threads

import (
	"time"

	"github.com/threadengine/engine/ports"
)

// Options are the operator's settings of the thread use cases
// (configuration section threads).
type Options struct {
	// InvitationMaxTTL bounds an invitation's expiresIn
	// (threads.invitation_max_ttl; 0: DefaultInvitationMaxTTL).
	InvitationMaxTTL time.Duration
	// Classifier judges semantic rules and answers decision goals and
	// advice (contracts.classifier; nil: none, semantic rules fail closed).
	Classifier ports.Classifier
}

// SetOptions applies the operator's settings. Call it before serving.
func (m *Module) SetOptions(o Options) {
	m.opts = o
	m.app = m.build()
}

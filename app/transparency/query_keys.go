package transparency

// The Keys query: the log's name and public keys.

import "context"

// PublicKeys are the log's origin (the first line of its checkpoints) and
// its verifier keys, newest first (the one signing now first).
type PublicKeys struct {
	Origin    string
	Verifiers []string
}

// KeysHandler answers the log's public keys; one of the Queries. It is
// public.
type KeysHandler struct {
	keys PublicKeys
}

// NewKeysHandler builds Keys from the log's origin and verifier keys.
func NewKeysHandler(origin string, verifiers []string) KeysHandler {
	return KeysHandler{keys: PublicKeys{Origin: origin, Verifiers: append([]string(nil), verifiers...)}}
}

// Handle returns the log's public keys.
func (h KeysHandler) Handle(context.Context) PublicKeys {
	return PublicKeys{Origin: h.keys.Origin, Verifiers: append([]string(nil), h.keys.Verifiers...)}
}

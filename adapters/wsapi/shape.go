package wsapi

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"

	"github.com/threadengine/engine/domain"
)

// fieldShape is the JSON type a field of a fire-and-forget frame must have.
type fieldShape int

const (
	shapeScalar  fieldShape = iota // string, number or boolean (or null)
	shapeStrings                   // a list of strings (or null)
)

// fireAndForgetFields are the fields each fire-and-forget action reads.
// Such frames are answered only with a requestId, so a malformed one (a
// field of the wrong JSON type, which no SDK sends) would otherwise vanish
// silently: it is answered with an error, requestId or not.
var fireAndForgetFields = map[string]map[string]fieldShape{
	"subscribe":        {"stepName": shapeScalar, "contractName": shapeScalar, "eventTypes": shapeStrings},
	"unsubscribe":      {"stepName": shapeScalar, "contractName": shapeScalar, "eventTypes": shapeStrings},
	"ack_notification": {"ackToken": shapeScalar, "ack_token": shapeScalar, "notification_id": shapeScalar, "thread_id": shapeScalar, "processed": shapeScalar},
	"heartbeat":        {},
	"cancelWait":       {"targetRequestId": shapeScalar},
}

// malformedFrame reports the first field of a fire-and-forget frame whose
// JSON type is wrong, as a validation error naming it; nil when the frame is
// well formed (or not fire-and-forget).
func malformedFrame(m Message) error {
	fields, ok := fireAndForgetFields[m.Action]
	if !ok {
		return nil
	}
	for _, name := range slices.Sorted(maps.Keys(fields)) {
		raw, present := m.fields[name]
		if !present || isNull(raw) {
			continue
		}
		raw = bytes.TrimSpace(raw)
		switch fields[name] {
		case shapeScalar:
			if len(raw) > 0 && (raw[0] == '{' || raw[0] == '[') {
				return domain.Invalid(name, "%s must be a string, not %s", name, jsonKind(raw))
			}
		case shapeStrings:
			var list []string
			if json.Unmarshal(raw, &list) != nil {
				return domain.Invalid(name, "%s must be a list of strings", name)
			}
		}
	}
	return nil
}

func jsonKind(raw []byte) string {
	if raw[0] == '{' {
		return "an object"
	}
	return "a list"
}

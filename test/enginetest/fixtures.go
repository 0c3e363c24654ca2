package enginetest

import _ "embed"

// OrderFlowYAML is a small contract shared by end-to-end, browser and
// JavaScript SDK tests: validate (needs context "items") → pay (one retry) →
// ship (terminal), owned by the parties checkout and warehouse.
//
//go:embed order_flow.yaml
var OrderFlowYAML string

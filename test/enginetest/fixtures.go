package enginetest

import _ "embed"

// OrderFlowYAML is a small contract shared by end-to-end, browser and
// JavaScript SDK tests: validate (needs context "items") → pay (one retry) →
// ship (terminal), owned by the parties checkout and warehouse.
//
//go:embed order_flow.yaml
var OrderFlowYAML string

// DecideFlowFeature is the Gherkin contract the decision tests (can, should,
// next) share with the JavaScript SDK's: order (entry, needs order_id) →
// review (a semantic question on "note") → charge (terminal: order must have
// succeeded, amount > 0, currency GBP/USD/EUR, order_id equal to order's),
// all owned by the party checkout.
//
//go:embed decide_flow.feature
var DecideFlowFeature string

// FreshPayFeature is the Gherkin contract the fresh-approval checks share
// (end to end and through the unmodified SDKs): approval (entry) → charge
// (needs its own approval each time, amount > 0) → close (terminal), all
// owned by the party ops.
//
//go:embed fresh_pay.feature
var FreshPayFeature string

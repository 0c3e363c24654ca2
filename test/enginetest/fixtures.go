package enginetest

// OrderFlowYAML is a small contract shared by end-to-end and browser tests:
// validate (needs context "items") → pay (one retry) → ship (terminal),
// owned by the parties checkout and warehouse.
const OrderFlowYAML = `
contract_name: order_flow
version: 1
entry_points: [validate]
parties: [checkout, warehouse]
steps:
  - id: validate
    owner: checkout
    business_context:
      required: [items]
  - id: pay
    owner: checkout
  - id: ship
    owner: warehouse
transitions:
  - from: validate
    to: pay
  - from: pay
    to: ship
    max_retries: 1
terminal_steps: [ship]
`

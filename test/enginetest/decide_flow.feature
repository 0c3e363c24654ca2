Feature: decide_flow
Version: 1
Rule: Order
  When step "order" is submitted
  Then owner must be "checkout"
  And this step is an entry point
  And content "order_id" must not be empty
  And next step must be one of "review"
Rule: Review
  When step "review" is submitted
  Then owner must be "checkout"
  And content "note" must satisfy question "Is the note polite?"
  And next step must be one of "charge"
Rule: Charge
  When step "charge" is submitted
  Then owner must be "checkout"
  And step "order" must have succeeded
  And content "amount" must be a number greater than 0
  And content "currency" must be one of "GBP", "USD", "EUR"
  And content "order_id" must equal order.order_id
  And this step is terminal

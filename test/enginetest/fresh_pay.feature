Feature: fresh_pay
Rule: Approve
  When step "approval" is submitted
  Then owner must be "ops"
  And this step is an entry point

Rule: Charge
  When step "charge" is submitted
  Then owner must be "ops"
  And step "approval" must succeed before each invocation
  And content "amount" must be a number greater than 0

Rule: Close
  When step "close" is submitted
  Then owner must be "ops"
  And step "charge" must have succeeded
  And this step is terminal

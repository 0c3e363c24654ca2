package webhookstore

// AnyDue exposes the claim's pre-check to the tests.
var AnyDue = (*Store).anyDue

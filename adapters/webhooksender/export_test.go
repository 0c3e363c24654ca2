package webhooksender

// Refused exposes the address check to the tests.
var Refused = refused

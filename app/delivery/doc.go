// Package delivery pushes the notification log to live subscribers (the
// hub, its acknowledgements and claims) and wakes the waits of waitFor
// (app/waits) when their thread changes, on any replica.
package delivery

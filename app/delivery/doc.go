// Package delivery pushes the notification log to live subscribers (the
// hub, its acknowledgements) and answers the waits of waitFor: whether a
// step may run now, and a recorded step's validation verdict.
package delivery

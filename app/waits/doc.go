// Package waits answers waitFor: whether a step may run now (a grant, made under the thread's lock), a recorded step's validation verdict, and giving a grant back or cancelling it; the delivery hub wakes the waits when their thread changes.
package waits

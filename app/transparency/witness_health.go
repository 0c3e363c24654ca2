package transparency

import "time"

// witnessWarnEvery is how often a witness that keeps failing is logged
// again (a change of state is logged at once): a witness that is down
// fails every checkpoint interval, and a line a second would drown the log.
const witnessWarnEvery = time.Minute

// witnessState is what a witness's last answer said.
type witnessState int

const (
	witnessCosigning   witnessState = iota // cosigned (or nothing to do)
	witnessFailing                         // down, timed out, an error
	witnessRefusesFork                     // holds a history this log is not consistent with
)

// witnessHealth decides when a witness's failures are logged: on a change
// of state, then at most once per witnessWarnEvery while it lasts. Owned by
// the witness's goroutine; pure (the time is passed in).
type witnessHealth struct {
	state      witnessState
	lastWarn   time.Time
	suppressed int // failures not logged since lastWarn
	failures   int // since the witness last cosigned
}

// failed records a failure; warn says whether to log it, suppressed how
// many failures since the last logged one were not.
func (h *witnessHealth) failed(now time.Time, s witnessState) (warn bool, suppressed int) {
	h.failures++
	if s != h.state || now.Sub(h.lastWarn) >= witnessWarnEvery {
		suppressed = h.suppressed
		h.state, h.lastWarn, h.suppressed = s, now, 0
		return true, suppressed
	}
	h.suppressed++
	return false, 0
}

// succeeded records a cosignature; recovered says the witness was failing
// (failures times) until now.
func (h *witnessHealth) succeeded() (failures int, recovered bool) {
	failures, recovered = h.failures, h.state != witnessCosigning
	*h = witnessHealth{}
	return failures, recovered
}

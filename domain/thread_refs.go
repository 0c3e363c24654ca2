package domain

import "time"

// AddRefs checks that actor may merge refs into the thread now: a party
// that may write, on a thread that has not ended. An ended thread's refs
// are part of its record (what it was about, what it links to, as exported
// and verified): a ref added after the end would change what people read as
// the record of a finished thread, so it is refused (thread_closed), like a
// step. Put later annotations on a new thread linked to it (linkThread from
// the new one).
func (t *Thread) AddRefs(a Actor, now time.Time) error {
	if _, err := t.Authorize(a, ActAddRefs, now); err != nil {
		return err
	}
	if t.Status.Closed() {
		return E(KindConflict, CodeThreadClosed, "thread is %s: an ended thread's refs cannot change", t.Status)
	}
	return nil
}

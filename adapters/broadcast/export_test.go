package broadcast

import "time"

// SetConfirmWait replaces confirmWait for one broadcaster (call before use).
func SetConfirmWait(b *Postgres, d time.Duration) { b.confirm = d }

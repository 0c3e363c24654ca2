package domain

import (
	"time"
)

// Thread is the aggregate every thread write goes through: its state, and the
// parties of the principal writing (the store loads them with the thread,
// under the thread's lock). The rules that change it are in thread_rules.go.
type Thread struct {
	ID              string
	ContractName    string // "" for free-form threads
	ContractVersion int
	Label           string
	OwnerKind       string
	OwnerID         string // the principal that started it
	ServiceName     string
	Status          ThreadStatus
	// Error says why a thread failed (the violation that failed it).
	Error string
	// EndReason is the reason a caller gave when cancelling (a string, or
	// the caller's object as JSON text); never a transport field.
	EndReason   string
	Tags        []string
	CreatedAt   time.Time
	UpdatedAt   time.Time
	CompletedAt *time.Time

	// Parties holds at least every party of the principal acting on the
	// thread (the store may load only those).
	Parties []Party
	// health is folded forward with every attempt (Append) and alert
	// (RecordAlert), and written with the row.
	health ThreadHealth

	// lastHash and stepCount are the chain head: the hash of the latest
	// attempt and how many there are. Only Append moves them (with the
	// health), so the count, the head and the health cannot disagree.
	lastHash  string
	stepCount int

	// traceRootEndedAt is when a trace thread's root span ended
	// (ObserveTrace); its quiet period runs from UpdatedAt.
	traceRootEndedAt *time.Time
	// traceStartedAt is when a trace thread's earliest span started, when
	// that is before CreatedAt (ObserveTrace). CreatedAt never moves: lists
	// page and overdue alerts measure by it.
	traceStartedAt *time.Time
}

// LastHash is the chain head: the hash of the thread's latest attempt (""
// before the first).
func (t Thread) LastHash() string { return t.lastHash }

// StepCount is how many attempts the thread holds (the latest one's seq).
func (t Thread) StepCount() int { return t.stepCount }

// RestoreHead sets the chain head a store loaded with the thread.
func (t *Thread) RestoreHead(lastHash string, stepCount int) {
	t.lastHash, t.stepCount = lastHash, stepCount
}

// Health is the thread's health, as its attempts and alerts folded it.
func (t Thread) Health() ThreadHealth { return t.health }

// RestoreHealth sets the health a store loaded (or replayed) with the thread.
func (t *Thread) RestoreHealth(h ThreadHealth) { t.health = h }

// NextLink is where the thread's next attempt goes: its seq and the hash it
// links to.
func (t *Thread) NextLink() (seq int, prevHash string) { return t.stepCount + 1, t.lastHash }

// Append records the attempt NextLink placed, hashed hash: the chain head
// moves to it, the count with it, and its outcome is folded into the health
// (ThreadHealth.Fold) — the three change together.
func (t *Thread) Append(hash string, o StepOutcome) {
	t.stepCount++
	t.lastHash = hash
	t.health = t.health.Fold(o)
}

// HasContract reports whether steps are judged against a contract.
func (t *Thread) HasContract() bool { return t.ContractName != "" }

// partiesOf returns the parties principalID holds on the thread.
func (t *Thread) partiesOf(principalID string) []Party {
	var out []Party
	for _, p := range t.Parties {
		if p.PrincipalID == principalID {
			out = append(out, p)
		}
	}
	return out
}

// ownedBy reports whether principalID owns the thread (started it, or holds
// an owner-level party).
func (t *Thread) ownedBy(principalID string) bool {
	if t.OwnerID == principalID {
		return true
	}
	for _, p := range t.partiesOf(principalID) {
		if p.Level == AccessOwner {
			return true
		}
	}
	return false
}

// setParty adds p, or replaces the party of the same principal and role.
func (t *Thread) setParty(p Party) {
	for i, q := range t.Parties {
		if q.PrincipalID == p.PrincipalID && q.Role == p.Role {
			t.Parties[i] = p
			return
		}
	}
	t.Parties = append(t.Parties, p)
}

// NewThread is a thread just started by actor under its role: the actor
// becomes its owner party.
func NewThread(id string, actor Actor, c *Contract, now time.Time) (Thread, error) {
	t := Thread{ID: id, OwnerKind: actor.PrincipalKind, OwnerID: actor.PrincipalID, Status: ThreadActive,
		CreatedAt: now, UpdatedAt: now}
	if c != nil {
		if err := c.checkParty(actor.Role); err != nil {
			return Thread{}, err
		}
		t.ContractName, t.ContractVersion = c.Name, c.Version
	}
	t.Parties = []Party{{PrincipalKind: actor.PrincipalKind, PrincipalID: actor.PrincipalID, Role: actor.Role,
		Level: AccessOwner, GrantedBy: actor.PrincipalID, GrantedAt: now}}
	return t, nil
}

// Owner is the owner party NewThread created.
func (t *Thread) Owner() Party {
	for _, p := range t.Parties {
		if p.PrincipalID == t.OwnerID && p.Level == AccessOwner {
			return p
		}
	}
	return Party{PrincipalKind: t.OwnerKind, PrincipalID: t.OwnerID, Level: AccessOwner}
}

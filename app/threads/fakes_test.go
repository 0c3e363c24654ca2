package threads

import (
	"context"
	"strings"
	"sync"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// fakeThreads is an in-memory ports.ThreadStore: one mutex stands for the
// thread row lock, so app thread tests run the same closures without SQL.
type fakeThreads struct {
	mu      sync.Mutex
	threads map[string]domain.Thread
	refs    map[string]map[string]string
	states  map[string][]ports.StepState // thread → states by latest attempt
	acts    map[string][]ports.Activity
	subs    map[string][]ports.SubStep // step id → sub-steps as written
	notes   []ports.NotificationRecord
	keys    map[string]string                  // namespace + "\x00" + key → thread id
	vals    map[string]*ports.ValidationRecord // step id → validation (nil: free-form)
	grants  map[string][]domain.StepGrant      // thread → grants
	// grantReads and grantLocks count ReadGrants and UpdateGrants calls.
	grantReads, grantLocks int
	// rowLock, when set, is received from before UpdateGrants runs: a
	// writer holding the thread's row lock until it is closed.
	rowLock chan struct{}
	// beforeKeyedCreate, when set, runs at the start of the next
	// CreateThreadWithKey (another replica winning the race meanwhile).
	beforeKeyedCreate func()
	// afterList, when set, runs once after the next ListActivities (a
	// writer committing between two reads).
	afterList func()
	// afterReadGrants, when set, runs once after the next ReadGrants (a
	// writer committing between a lock-free read and an append).
	afterReadGrants func()
}

func newFakeThreads() *fakeThreads {
	return &fakeThreads{threads: map[string]domain.Thread{}, refs: map[string]map[string]string{},
		states: map[string][]ports.StepState{}, acts: map[string][]ports.Activity{}, subs: map[string][]ports.SubStep{}}
}

var _ ports.ThreadStore = (*fakeThreads)(nil)

func clone(t domain.Thread) domain.Thread {
	t.Parties = append([]domain.Party(nil), t.Parties...)
	return t
}

func (f *fakeThreads) CreateThread(_ context.Context, t domain.Thread, refs map[string]string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.threads[t.ID] = clone(t)
	f.refs[t.ID] = map[string]string{}
	for k, v := range refs {
		f.refs[t.ID][k] = v
	}
	return nil
}

func (f *fakeThreads) GetThread(_ context.Context, id string) (domain.Thread, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.threads[id]
	if !ok {
		return domain.Thread{}, domain.NotFound("thread")
	}
	return clone(t), nil
}

func (f *fakeThreads) AppendStep(_ context.Context, threadID string, w ports.AppendWriter, stepName, key string, withStates bool,
	plan func(ports.StepTx) (ports.StepPlan, error)) (ports.StepPlan, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.threads[threadID]
	if !ok {
		return ports.StepPlan{}, domain.NotFound("thread")
	}
	v := ports.StepTx{Thread: clone(t)}
	// As the SQL store: only the writer's parties.
	v.Thread.Parties = nil
	for _, p := range t.Parties {
		if p.PrincipalID == w.PrincipalID {
			v.Thread.Parties = append(v.Thread.Parties, p)
		}
	}
	states := f.states[threadID]
	for i := range states {
		if states[i].StepName == stepName && states[i].IdempotencyKey == key {
			st := states[i]
			v.Current = &st
		}
	}
	if n := len(states); n > 0 {
		v.LastStepName = states[n-1].StepName
	}
	if withStates {
		v.States = append([]ports.StepState(nil), states...)
	}
	for _, g := range f.grants[threadID] {
		if w.InvocationID != "" && g.InvocationID == w.InvocationID {
			v.Grant = g.Status
		}
	}
	p, err := plan(v)
	if err != nil || p.Duplicate {
		return p, err
	}
	nt := p.Thread
	nt.Parties = t.Parties // an append never writes parties
	f.threads[threadID] = nt
	f.acts[threadID] = append(f.acts[threadID], p.Activity)
	f.subs[p.Activity.ID] = p.SubSteps
	if f.vals == nil {
		f.vals = map[string]*ports.ValidationRecord{}
	}
	f.vals[p.Activity.ID] = p.Validation
	kept := states[:0:0]
	for _, s := range states {
		if s.StepName != stepName || s.IdempotencyKey != key {
			kept = append(kept, s)
		}
	}
	f.states[threadID] = append(kept, p.State)
	for k, val := range p.Refs {
		f.refs[threadID][k] = val
	}
	f.notes = append(f.notes, p.Notifications...)
	return p, nil
}

func (f *fakeThreads) ListStepStates(_ context.Context, threadID string) ([]ports.StepState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]ports.StepState(nil), f.states[threadID]...), nil
}

func (f *fakeThreads) UpdateThread(_ context.Context, threadID string, fn ports.ThreadUpdate) (domain.Thread, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.threads[threadID]
	if !ok {
		return domain.Thread{}, domain.NotFound("thread")
	}
	t = clone(t)
	eff, err := fn(&t)
	if err != nil {
		return domain.Thread{}, err
	}
	f.threads[threadID] = clone(t)
	for k, v := range eff.Refs {
		f.refs[threadID][k] = v
	}
	f.notes = append(f.notes, eff.Notifications...)
	return t, nil
}

func (f *fakeThreads) FindThreadByRef(_ context.Context, key, value string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for id, refs := range f.refs {
		if refs[key] == value {
			return id, nil
		}
	}
	return "", domain.NotFound("thread")
}

func (f *fakeThreads) ListActivities(_ context.Context, threadID string) ([]ports.Activity, error) {
	f.mu.Lock()
	out := append([]ports.Activity(nil), f.acts[threadID]...)
	after := f.afterList
	f.afterList = nil
	f.mu.Unlock()
	if after != nil {
		after()
	}
	return out, nil
}

func (f *fakeThreads) HasActivity(_ context.Context, threadID, stepName, key string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, a := range f.acts[threadID] {
		if a.StepName == stepName && a.IdempotencyKey == key {
			return true, nil
		}
	}
	return false, nil
}

func (f *fakeThreads) CreateThreadWithKey(ctx context.Context, namespace, key string, t domain.Thread, refs map[string]string, also ...ports.KeyName) (domain.Thread, bool, error) {
	names := append([]ports.KeyName{{Namespace: namespace, Key: key}}, also...)
	f.mu.Lock()
	if hook := f.beforeKeyedCreate; hook != nil {
		f.beforeKeyedCreate = nil
		f.mu.Unlock()
		hook()
		f.mu.Lock()
	}
	for _, k := range names {
		if id, ok := f.keys[k.Namespace+"\x00"+k.Key]; ok {
			th := clone(f.threads[id])
			f.mu.Unlock()
			return th, false, nil
		}
	}
	if f.keys == nil {
		f.keys = map[string]string{}
	}
	for _, k := range names {
		f.keys[k.Namespace+"\x00"+k.Key] = t.ID
	}
	f.mu.Unlock()
	return t, true, f.CreateThread(ctx, t, refs)
}

func (f *fakeThreads) FindThreadByKey(ctx context.Context, namespace, key string) (domain.Thread, error) {
	f.mu.Lock()
	id, ok := f.keys[namespace+"\x00"+key]
	f.mu.Unlock()
	if !ok {
		return domain.Thread{}, domain.NotFound("thread")
	}
	return f.GetThread(ctx, id)
}

func (f *fakeThreads) BindThreadKey(_ context.Context, namespace, key, threadID string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.keys == nil {
		f.keys = map[string]string{}
	}
	if id, ok := f.keys[namespace+"\x00"+key]; ok {
		return id, nil
	}
	f.keys[namespace+"\x00"+key] = threadID
	return threadID, nil
}

func (f *fakeThreads) ThreadKey(_ context.Context, threadID string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for k, id := range f.keys {
		if ns, key, _ := strings.Cut(k, "\x00"); id == threadID && ns == KeyApp {
			return key, nil
		}
	}
	return "", nil
}

func (f *fakeThreads) StepValidation(_ context.Context, threadID, stepID string) (*ports.ValidationRecord, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, a := range f.acts[threadID] {
		if a.ID == stepID {
			return f.vals[stepID], true, nil
		}
	}
	return nil, false, nil
}

func (f *fakeThreads) ListRefs(_ context.Context, threadID string) (map[string]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]string{}
	for k, v := range f.refs[threadID] {
		out[k] = v
	}
	return out, nil
}

func (f *fakeThreads) ReadGrants(_ context.Context, threadID string) (ports.GrantTx, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if after := f.afterReadGrants; after != nil {
		f.afterReadGrants = nil
		defer func() { f.mu.Unlock(); after(); f.mu.Lock() }()
	}
	f.grantReads++
	t, ok := f.threads[threadID]
	if !ok {
		return ports.GrantTx{}, domain.NotFound("thread")
	}
	return ports.GrantTx{Thread: clone(t), States: append([]ports.StepState(nil), f.states[threadID]...),
		Grants: append([]domain.StepGrant(nil), f.grants[threadID]...)}, nil
}

func (f *fakeThreads) UpdateGrants(_ context.Context, threadID string, fn func(ports.GrantTx) (*domain.StepGrant, error)) error {
	f.mu.Lock()
	lock := f.rowLock
	f.mu.Unlock()
	if lock != nil {
		<-lock
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.grantLocks++
	t, ok := f.threads[threadID]
	if !ok {
		return domain.NotFound("thread")
	}
	g, err := fn(ports.GrantTx{Thread: clone(t), States: append([]ports.StepState(nil), f.states[threadID]...),
		Grants: append([]domain.StepGrant(nil), f.grants[threadID]...)})
	if err != nil || g == nil {
		return err
	}
	if f.grants == nil {
		f.grants = map[string][]domain.StepGrant{}
	}
	for i, old := range f.grants[threadID] {
		if old.InvocationID == g.InvocationID {
			f.grants[threadID][i].Status, f.grants[threadID][i].Answer = g.Status, g.Answer
			return nil
		}
	}
	f.grants[threadID] = append(f.grants[threadID], *g)
	return nil
}

func (f *fakeThreads) ReleaseGrant(_ context.Context, threadID, invocationID, answer string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	kept := f.grants[threadID][:0:0]
	for _, g := range f.grants[threadID] {
		if g.InvocationID != invocationID || g.Status != domain.GrantAllowed || g.Answer != answer {
			kept = append(kept, g)
		}
	}
	f.grants[threadID] = kept
	return nil
}

package app

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/threadengine/engine/app/delivery"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// Limits on one write; they bound the size of rows and of the hash input.
const (
	MaxRefs        = 64
	MaxRefKeyLen   = 256
	MaxRefValueLen = 2048
	MaxTags        = 32
	MaxStepNameLen = 256
	MaxSubSteps    = 256
	// MaxInvocationIDLen is in characters: SDKs generate the id, typically a UUID.
	MaxInvocationIDLen = 128
)

// Threads records thread execution data: threads, steps (append-only, hash
// chained, contract validated), refs, parties and notifications. It holds
// what the use cases share (ports, contract cache, clock, chain and
// invitation keys, metrics, hub); the use cases are the handlers of its
// Application() (app/command_*.go, app/query_*.go). Every rule they apply is
// the domain.Thread aggregate's, run inside the store's transaction with the
// thread locked.
type Threads struct {
	store      ports.ThreadStore
	contracts  ports.Contracts // nil: contract threads are refused
	clock      ports.Clock
	keys       domain.ChainKeys
	inviteKeys []inviteKey // current first
	hub        *delivery.Hub
	publisher  ports.NotificationPublisher // the hub, behind its port
	log        *slog.Logger
	metrics    ports.Metrics

	cmu        sync.RWMutex
	cache      map[string]domain.Contract // "name:version" → contract (versions are immutable)
	threadRefs map[string]contractRef     // thread id → its contract
}

// NewThreads wires the use cases. secret keys the hash chain and invitations.
func NewThreads(store ports.ThreadStore, contracts ports.Contracts, clock ports.Clock, secret []byte, log *slog.Logger) *Threads {
	if log == nil {
		log = slog.Default()
	}
	if clock == nil {
		clock = ports.SystemClock{}
	}
	notes, _ := store.(ports.NotificationLog)
	hub := delivery.NewHub(notes, clock, log)
	t := &Threads{store: validIDStore{store}, contracts: contracts, clock: clock, hub: hub, publisher: hub, log: log, metrics: ports.NopMetrics{},
		cache: map[string]domain.Contract{}, threadRefs: map[string]contractRef{}}
	t.UseChainKeys(domain.SingleChainKey(secret))
	return t
}

// Hub delivers the notification log to WebSocket sessions.
func (t *Threads) Hub() *delivery.Hub { return t.hub }

// SetMetrics makes the thread use cases and their hub report to m. Call it
// before serving requests.
func (t *Threads) SetMetrics(m ports.Metrics) {
	t.metrics = m
	t.hub.SetMetrics(m)
}

// Metrics is where thread events are counted (never nil, even on a nil
// *Threads: adapter unit tests run handlers without the use cases).
func (t *Threads) Metrics() ports.Metrics {
	if t == nil || t.metrics == nil {
		return ports.NopMetrics{}
	}
	return t.metrics
}

// countStep reports a committed append: the step, its validation and the
// thread's end when the step closed it (appends only plan on active threads).
func (t *Threads) countStep(plan ports.StepPlan) {
	t.metrics.StepRecorded(plan.Activity.Status, plan.Thread.ContractName)
	if v := plan.Validation; v != nil {
		sev := ""
		if issues, ok := v.Issues.([]domain.ValidationIssue); ok {
			if worst, found := (domain.ValidationResult{Issues: issues}).MostSevere(); found {
				sev = string(worst.Severity)
			}
		}
		t.metrics.ValidationRecorded(v.OverallStatus, sev)
	}
	if plan.Thread.Status != domain.ThreadActive {
		t.metrics.ThreadEnded(string(plan.Thread.Status))
	}
}

func (t *Threads) now() time.Time { return t.clock.Now().UTC().Truncate(time.Microsecond) }

// actor is the caller acting on a thread under role (the role its connection
// started or joined the thread with; "" when it declared none).
func actor(p domain.Principal, role string) domain.Actor {
	return domain.Actor{PrincipalKind: string(p.Kind), PrincipalID: p.ID, Role: role, Scoped: p.PartyScoped()}
}

func (t *Threads) contractByRef(ctx context.Context, ref string) (domain.Contract, error) {
	name, version, err := domain.ParseContractRef(ref)
	if err != nil {
		return domain.Contract{}, err
	}
	return t.contract(ctx, name, version)
}

// contract loads a contract version; pinned versions are cached (immutable),
// "latest" is always looked up.
func (t *Threads) contract(ctx context.Context, name string, version int) (domain.Contract, error) {
	if t.contracts == nil {
		return domain.Contract{}, domain.NotFound("contract " + name)
	}
	key := name + ":" + strconv.Itoa(version)
	if version > 0 {
		t.cmu.RLock()
		c, ok := t.cache[key]
		t.cmu.RUnlock()
		if ok {
			return c, nil
		}
	}
	c, err := t.contracts.GetContract(ctx, name, version)
	if err != nil {
		if domain.KindOf(err) == domain.KindNotFound {
			return domain.Contract{}, domain.NotFound("contract " + strings.TrimSuffix(key, ":0"))
		}
		return domain.Contract{}, err
	}
	t.cmu.Lock()
	t.cache[c.Ref()] = c
	t.cmu.Unlock()
	return c, nil
}

type contractRef struct {
	name    string
	version int
}

// maxThreadRefs bounds the thread → contract cache; when full it starts over.
const maxThreadRefs = 100_000

// threadContract returns the contract a thread was started with (nil for a
// free-form thread). A thread's contract never changes, so the answer is
// cached and the hot path of recording a step skips one query. It is read
// before the write transaction so the row lock is held only for the write
// itself (and SQLite's single connection is not needed twice).
func (t *Threads) threadContract(ctx context.Context, threadID string) (*domain.Contract, error) {
	t.cmu.RLock()
	ref, ok := t.threadRefs[threadID]
	t.cmu.RUnlock()
	if !ok {
		th, err := t.store.GetThread(ctx, threadID)
		if err != nil {
			return nil, err
		}
		ref = contractRef{th.ContractName, th.ContractVersion}
		t.rememberThread(th.ID, ref)
	}
	if ref.name == "" {
		return nil, nil
	}
	c, err := t.contract(ctx, ref.name, ref.version)
	if err != nil {
		return nil, err
	}
	return &c, nil
}

// ForgetContract drops a deleted contract version from the cache.
func (t *Threads) ForgetContract(name string, version int) {
	t.cmu.Lock()
	delete(t.cache, name+":"+strconv.Itoa(version))
	t.cmu.Unlock()
}

// ForgetThreads drops deleted threads from the thread → contract cache.
func (t *Threads) ForgetThreads(ids []string) {
	t.cmu.Lock()
	for _, id := range ids {
		delete(t.threadRefs, id)
	}
	t.cmu.Unlock()
}

func (t *Threads) rememberThread(id string, ref contractRef) {
	t.cmu.Lock()
	if len(t.threadRefs) >= maxThreadRefs {
		t.threadRefs = map[string]contractRef{}
	}
	t.threadRefs[id] = ref
	t.cmu.Unlock()
}

func threadEvent(th domain.Thread, status domain.ThreadStatus, msg string, now time.Time) ports.NotificationRecord {
	return ports.NotificationRecord{ID: uuid.NewString(), ThreadID: th.ID, StepName: "global",
		ContractName: th.ContractName, OwnerID: th.OwnerID, Source: "thread", NotificationType: "thread." + string(status),
		ValidationStatus: "none", Severity: "info", Message: msg, CreatedAt: now}
}

func checkRefs(refs map[string]string) error {
	if len(refs) > MaxRefs {
		return domain.Invalid("refs", "at most %d refs", MaxRefs)
	}
	for k, v := range refs {
		if k == "" || len(k) > MaxRefKeyLen {
			return domain.Invalid("refs", "ref keys must be 1-%d bytes", MaxRefKeyLen)
		}
		if len(v) > MaxRefValueLen {
			return domain.Invalid("refs", "ref %q is longer than %d bytes", k, MaxRefValueLen)
		}
	}
	return nil
}

// AuthorizeIngest refuses a caller that may not write threads, before a
// transport reads a request body (OTLP); every write use case checks the
// same again.
func (t *Threads) AuthorizeIngest(ctx context.Context) error {
	_, err := Require(ctx, domain.PermThreadsWrite)
	return err
}

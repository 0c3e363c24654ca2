package threads

import (
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/google/uuid"

	"github.com/threadengine/engine/app/delivery"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// Limits on one write; they bound the size of rows and of the hash input.
// (An invocation id's bound is waits.MaxInvocationIDLen: it names a grant
// too.)
const (
	MaxRefs        = 64
	MaxRefKeyLen   = 256
	MaxRefValueLen = 2048
	MaxTags        = 32
	MaxStepNameLen = 256
	MaxSubSteps    = 256
)

// Module wires the thread use cases: threads, steps (append-only, hash
// chained, contract validated), refs, parties, and the waits of waitFor
// (app/waits), with the notification hub (app/delivery) they publish to. It holds what
// the use cases share (the store behind its id check, the contract cache,
// the chain keys, the hub) and builds one handler per use case
// (Application), each given only the ports it uses. Every rule they apply is
// the domain.Thread aggregate's, run inside the store's transaction with the
// thread locked.
type Module struct {
	opts      Options // the operator's settings (SetOptions)
	store     ports.ThreadStore
	contracts *contractCache
	clock     ports.Clock
	keys      domain.ChainKeys
	hub       *delivery.Hub
	metrics   Metrics
	refusals  refusals
	app       Application
}

// New wires the use cases. secret keys the hash chain and invitations.
func New(store ports.ThreadStore, contracts ContractReader, clock ports.Clock, secret []byte, log *slog.Logger) *Module {
	if log == nil {
		log = slog.Default()
	}
	if clock == nil {
		clock = ports.SystemClock{}
	}
	notes, _ := store.(ports.NotificationLog)
	valid := validIDStore{store}
	refusalLog, _ := store.(ports.RefusalLog)
	m := &Module{store: valid, contracts: newContractCache(valid, contracts), clock: clock,
		hub: delivery.NewHub(notes, clock, log), metrics: ports.NopMetrics{},
		refusals: refusals{log: refusalLog, clock: clock, logger: log, retention: DefaultRefusalRetention, lastPrune: new(atomic.Int64)}}
	m.UseChainKeys(domain.SingleChainKey(secret))
	return m
}

// SetRefusalRetention sets how long refused step submissions are kept
// (contracts.refusal_retention; 0 keeps the default). Call it before
// serving requests.
func (m *Module) SetRefusalRetention(d time.Duration) {
	if d > 0 {
		m.refusals.retention = d
		m.app = m.build()
	}
}

// Hub delivers the notification log to WebSocket sessions.
func (m *Module) Hub() *delivery.Hub { return m.hub }

// Metrics is what the thread use cases and their hub count (the engine's
// ports.Metrics has it).
type Metrics interface {
	ports.ThreadMetrics
	ports.DeliveryMetrics
}

// SetMetrics makes the thread use cases and their hub report to metrics.
// Call it before serving requests.
func (m *Module) SetMetrics(metrics Metrics) {
	m.metrics = metrics
	m.hub.SetMetrics(metrics)
	m.app = m.build()
}

// UseChainKeys replaces the single secret given to New with the
// installation's versioned keys (the composition root loads them from the
// database). Call it before serving requests.
func (m *Module) UseChainKeys(k domain.ChainKeys) {
	m.keys = k
	m.app = m.build()
}

// ForgetContract drops a deleted contract version from the cache.
func (m *Module) ForgetContract(name string, version int) { m.contracts.forgetContract(name, version) }

// ForgetThreads drops deleted threads from the thread → contract cache.
func (m *Module) ForgetThreads(ids []string) { m.contracts.forgetThreads(ids) }

// countStep reports a committed append: the step, its validation (and each
// of its issues worse than info, by contract and rule) and the thread's end when the step closed it (appends only plan on active threads).
func countStep(metrics ports.ThreadMetrics, plan ports.StepPlan) {
	metrics.StepRecorded(plan.Activity.Status, plan.Thread.ContractName)
	if v := plan.Validation; v != nil {
		sev := ""
		if issues, ok := v.Issues.([]domain.ValidationIssue); ok {
			if worst, found := (domain.ValidationResult{Issues: issues}).MostSevere(); found {
				sev = string(worst.Severity)
			}
			for _, is := range issues {
				if is.Severity != domain.SeverityInfo {
					metrics.ViolationRecorded(plan.Thread.ContractName, is.Type, string(is.Severity))
				}
			}
		}
		metrics.ValidationRecorded(v.OverallStatus, sev)
	}
	if plan.Thread.Status != domain.ThreadActive {
		metrics.ThreadEnded(string(plan.Thread.Status))
	}
}

// now is the thread use cases' clock: UTC, at the microsecond the stores keep.
func now(c ports.Clock) time.Time { return c.Now().UTC().Truncate(time.Microsecond) }

// ThreadEvent is the notification of a thread ending (or changing status)
// with msg; the thread use cases and app/ingest publish it.
func ThreadEvent(th domain.Thread, status domain.ThreadStatus, msg string, now time.Time) ports.NotificationRecord {
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

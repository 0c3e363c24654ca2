package threads

// The StartThreadWithKey command: starts or resumes the one thread of an
// application key (WebSocket thread) or of an OpenTelemetry trace (OTLP).

import (
	"context"
	"strings"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// Key namespaces: one thread per application key (the thread action, OTLP's
// threadify.thread_key) and one per OpenTelemetry trace.
const (
	KeyApp   = "key"
	KeyTrace = "otel_trace"
)

// MaxThreadKeyLen is in bytes (the Python SDK's bound).
const MaxThreadKeyLen = 1024

// StartThreadWithKeyHandler starts or resumes the thread of a key; one of the Commands.
type StartThreadWithKeyHandler struct {
	keys      ports.KeyedThreads
	creator   ports.ThreadCreator // a party-scoped caller's own thread for a trace
	threads   ports.ThreadGetter
	byRef     FindThreadByRefHandler
	contracts *contractCache
	clock     ports.Clock
	metrics   ports.ThreadMetrics
}

// NewStartThreadWithKeyHandler builds StartThreadWithKey.
func NewStartThreadWithKeyHandler(keys ports.KeyedThreads, creator ports.ThreadCreator, threads ports.ThreadGetter,
	byRef FindThreadByRefHandler, contracts *contractCache, clock ports.Clock, metrics ports.ThreadMetrics) StartThreadWithKeyHandler {
	return StartThreadWithKeyHandler{keys: keys, creator: creator, threads: threads, byRef: byRef, contracts: contracts, clock: clock, metrics: metrics}
}

// Handle returns the thread key names, creating it from in when
// there is none — exactly one thread per key, also under concurrent calls on
// several replicas (the key's primary key decides). A known key resumes:
// the stored thread is returned and in's options are ignored, except that a
// different contract is refused and a thread that is no longer active is
// refused (thread_closed). Writes on a resumed thread are judged by the
// thread's party rules as any other.
func (h StartThreadWithKeyHandler) Handle(ctx context.Context, namespace, key string, in StartThreadInput) (domain.Thread, bool, error) {
	p, err := authz.Require(ctx, domain.PermThreadsWrite)
	if err != nil {
		return domain.Thread{}, false, err
	}
	if namespace == KeyApp {
		key = strings.TrimSpace(key)
		if key == "" {
			return domain.Thread{}, false, domain.Invalid("threadKey", "Missing required field: threadKey")
		}
		if len(key) > MaxThreadKeyLen {
			return domain.Thread{}, false, domain.Invalid("threadKey", "threadKey is longer than %d bytes", MaxThreadKeyLen)
		}
	}
	th, err := h.keys.FindThreadByKey(ctx, namespace, key)
	return h.resolve(ctx, p, namespace, key, in, th, err)
}

// resolve resumes th, what the look-up of (namespace, key) found, or
// creates the key's thread when it found none (err not found), named by the
// keys in also too.
func (h StartThreadWithKeyHandler) resolve(ctx context.Context, p domain.Principal, namespace, key string, in StartThreadInput,
	th domain.Thread, err error, also ...ports.KeyName) (domain.Thread, bool, error) {
	created := false
	switch {
	case err == nil:
	case domain.KindOf(err) != domain.KindNotFound:
		return domain.Thread{}, false, err
	default:
		nt, err := newThread(ctx, h.contracts, h.clock, p, in)
		if err != nil {
			return domain.Thread{}, false, err
		}
		if th, created, err = h.keys.CreateThreadWithKey(ctx, namespace, key, nt, in.Refs, also...); err != nil {
			return domain.Thread{}, false, err
		}
		if !created && len(also) > 0 {
			// Another writer took one of the keys first: its thread gets the
			// others too, and (namespace, key) decides where this goes —
			// unless the caller may not see that thread, whose keys are not
			// the caller's to bind.
			if verr := authz.CheckVisible(p, &th, now(h.clock)); verr != nil {
				// As without the race: a trace taken by another's thread
				// starts the caller's own; an application key that names
				// one is refused.
				if taken, err := h.keys.FindThreadByKey(ctx, namespace, key); err == nil && taken.ID == th.ID {
					return h.startOutsideScope(ctx, p, namespace, key, in, verr)
				}
				return domain.Thread{}, false, verr
			}
			for _, k := range also {
				if _, err := h.keys.BindThreadKey(ctx, k.Namespace, k.Key, th.ID); err != nil {
					return domain.Thread{}, false, err
				}
			}
			if th, err = h.bound(ctx, namespace, key, th); err != nil {
				return domain.Thread{}, false, err
			}
		}
	}
	if !created {
		if verr := authz.CheckVisible(p, &th, now(h.clock)); verr != nil {
			return h.startOutsideScope(ctx, p, namespace, key, in, verr)
		}
	}
	h.contracts.remember(th)
	if created {
		h.metrics.ThreadStarted(th.ContractName)
		return th, true, nil
	}
	return th, false, th.CheckResume(in.Contract)
}

// bound makes (namespace, key) name th unless it names a thread already, and
// returns the thread it names.
func (h StartThreadWithKeyHandler) bound(ctx context.Context, namespace, key string, th domain.Thread) (domain.Thread, error) {
	id, err := h.keys.BindThreadKey(ctx, namespace, key, th.ID)
	if err != nil || id == th.ID {
		return th, err
	}
	return h.threads.GetThread(ctx, id)
}

// HandleTrace is Handle for an OpenTelemetry trace: by the trace id, or by
// the application key one of its spans carries (threadify.thread_key). The
// trace id decides: a trace that already has a thread keeps it (and the key,
// if it names no thread yet, names that one). A keyed trace without one
// takes the key's thread, or a new thread named by both the key and the
// trace in one transaction, so a batch without the key arriving at the same
// moment on another replica cannot split the trace (whichever commits
// first, both end on the trace's one thread).
func (h StartThreadWithKeyHandler) HandleTrace(ctx context.Context, traceID, appKey string, in StartThreadInput) (domain.Thread, bool, error) {
	p, err := authz.Require(ctx, domain.PermThreadsWrite)
	if err != nil {
		return domain.Thread{}, false, err
	}
	if appKey = strings.TrimSpace(appKey); len(appKey) > MaxThreadKeyLen {
		return domain.Thread{}, false, domain.Invalid("threadify.thread_key", "threadify.thread_key is longer than %d bytes", MaxThreadKeyLen)
	}
	traced, err := h.keys.FindThreadByKey(ctx, KeyTrace, traceID)
	if err == nil && appKey != "" && authz.CheckVisible(p, &traced, now(h.clock)) == nil {
		// The key's first use may come after the trace got its thread (from
		// a batch without the key): the key names that thread then.
		if _, err := h.keys.BindThreadKey(ctx, KeyApp, appKey, traced.ID); err != nil {
			return domain.Thread{}, false, err
		}
	}
	if appKey == "" || err == nil || domain.KindOf(err) != domain.KindNotFound {
		return h.resolve(ctx, p, KeyTrace, traceID, in, traced, err)
	}
	keyed, err := h.keys.FindThreadByKey(ctx, KeyApp, appKey)
	switch {
	case err == nil:
		if verr := authz.CheckVisible(p, &keyed, now(h.clock)); verr != nil {
			return domain.Thread{}, false, verr // the key is not the caller's to use
		}
		th, err := h.bound(ctx, KeyTrace, traceID, keyed)
		return h.resolve(ctx, p, KeyTrace, traceID, in, th, err)
	case domain.KindOf(err) != domain.KindNotFound:
		return domain.Thread{}, false, err
	}
	return h.resolve(ctx, p, KeyTrace, traceID, in, domain.Thread{}, err, ports.KeyName{Namespace: KeyApp, Key: appKey})
}

// startOutsideScope: the key names a thread a party-scoped caller may not
// see. Its trace spans start (or resume) the caller's own thread for the
// trace, found by ref, as before keys existed — not idempotent across
// replicas for such callers; an application key is answered as the unknown
// thread it is to the caller.
func (h StartThreadWithKeyHandler) startOutsideScope(ctx context.Context, p domain.Principal, namespace, key string, in StartThreadInput, notVisible error) (domain.Thread, bool, error) {
	if namespace != KeyTrace {
		return domain.Thread{}, false, notVisible
	}
	if id, err := h.byRef.Handle(ctx, "otel_trace_id", key); err == nil {
		th, err := h.threads.GetThread(ctx, id)
		return th, false, err
	} else if domain.KindOf(err) != domain.KindNotFound {
		return domain.Thread{}, false, err
	}
	th, err := newThread(ctx, h.contracts, h.clock, p, in)
	if err != nil {
		return domain.Thread{}, false, err
	}
	if in.Refs == nil || in.Refs["otel_trace_id"] == "" {
		refs := map[string]string{"otel_trace_id": key}
		for k, v := range in.Refs {
			refs[k] = v
		}
		in.Refs = refs
	}
	if err := h.creator.CreateThread(ctx, th, in.Refs); err != nil {
		return domain.Thread{}, false, err
	}
	h.contracts.remember(th)
	h.metrics.ThreadStarted(th.ContractName)
	return th, true, nil
}

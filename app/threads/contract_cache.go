package threads

import (
	"context"
	"strconv"
	"strings"
	"sync"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// ContractReader reads contract versions (ports.Contracts' reading half the
// thread use cases need).
type ContractReader interface {
	// GetContract returns one version; version 0 means the latest.
	GetContract(ctx context.Context, name string, version int) (domain.Contract, error)
}

// contractCache resolves the contracts threads are judged by: contract
// versions are immutable, and so is the version a thread was started with,
// so both are cached (deletions are forgotten through the Module).
type contractCache struct {
	threads   ports.ThreadGetter
	contracts ContractReader // nil: contract threads are refused

	mu         sync.RWMutex
	cache      map[string]domain.Contract // "name:version" → contract (versions are immutable)
	threadRefs map[string]contractRef     // thread id → its contract
}

func newContractCache(threads ports.ThreadGetter, contracts ContractReader) *contractCache {
	return &contractCache{threads: threads, contracts: contracts, cache: map[string]domain.Contract{}, threadRefs: map[string]contractRef{}}
}

func (t *contractCache) contractByRef(ctx context.Context, ref string) (domain.Contract, error) {
	name, version, err := domain.ParseContractRef(ref)
	if err != nil {
		return domain.Contract{}, err
	}
	return t.contract(ctx, name, version)
}

// contract loads a contract version; pinned versions are cached (immutable),
// "latest" is always looked up.
func (t *contractCache) contract(ctx context.Context, name string, version int) (domain.Contract, error) {
	if t.contracts == nil {
		return domain.Contract{}, domain.NotFound("contract " + name)
	}
	key := name + ":" + strconv.Itoa(version)
	if version > 0 {
		t.mu.RLock()
		c, ok := t.cache[key]
		t.mu.RUnlock()
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
	t.mu.Lock()
	t.cache[c.Ref()] = c
	t.mu.Unlock()
	return c, nil
}

type contractRef struct {
	name    string
	version int
}

// maxThreadRefs bounds the thread → contract cache; when full it starts over.
const maxThreadRefs = 100_000

// ThreadContract returns the contract a thread was started with (nil for a
// free-form thread). A thread's contract never changes, so the answer is
// cached and the hot path of recording a step skips one query. It is read
// before the write transaction so the row lock is held only for the write
// itself (and SQLite's single connection is not needed twice).
func (t *contractCache) ThreadContract(ctx context.Context, threadID string) (*domain.Contract, error) {
	t.mu.RLock()
	ref, ok := t.threadRefs[threadID]
	t.mu.RUnlock()
	if !ok {
		th, err := t.threads.GetThread(ctx, threadID)
		if err != nil {
			return nil, err
		}
		ref = contractRef{th.ContractName, th.ContractVersion}
		t.remember(th)
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

// forgetContract drops a deleted contract version from the cache.
func (t *contractCache) forgetContract(name string, version int) {
	t.mu.Lock()
	delete(t.cache, name+":"+strconv.Itoa(version))
	t.mu.Unlock()
}

// forgetThreads drops deleted threads from the thread → contract cache.
func (t *contractCache) forgetThreads(ids []string) {
	t.mu.Lock()
	for _, id := range ids {
		delete(t.threadRefs, id)
	}
	t.mu.Unlock()
}

// remember records the contract th was started with.
func (t *contractCache) remember(th domain.Thread) {
	t.mu.Lock()
	if len(t.threadRefs) >= maxThreadRefs {
		t.threadRefs = map[string]contractRef{}
	}
	t.threadRefs[th.ID] = contractRef{th.ContractName, th.ContractVersion}
	t.mu.Unlock()
}

package graphqlapi

import "sync"

// SDKs send the same few query texts over and over, so the variable-free part
// of the analysis (parse, operation choice, depth check, ID relaxation) is
// kept per query text. Pricing depends on variables and runs every time.

const (
	cacheEntries  = 256
	cacheMaxQuery = 4 << 10 // longer texts are analysed every time (SDK queries are under 1 KiB)
)

type analysis struct {
	doc     *document
	op      *operation // nil when the operation cannot be chosen
	query   string     // after relaxIDs
	tooDeep string     // the depth error, if any
	err     error      // the syntax error, if any
}

type analysisCache struct {
	mu sync.RWMutex
	m  map[string]*analysis
}

func (c *analysisCache) get(key string) *analysis {
	c.mu.RLock()
	a := c.m[key]
	c.mu.RUnlock()
	return a
}

func (c *analysisCache) put(key string, a *analysis) {
	if len(key) > cacheMaxQuery {
		return
	}
	c.mu.Lock()
	// Dropping everything when full keeps the cache bounded without
	// bookkeeping; the working set of real clients is far below the cap.
	if c.m == nil || len(c.m) >= cacheEntries {
		c.m = make(map[string]*analysis, cacheEntries)
	}
	c.m[key] = a
	c.mu.Unlock()
}

package graphqlapi

import "sync"

// SDKs send the same few query texts over and over, so the variable-free part
// of the analysis (parse, operation choice, cycle and depth checks, ID
// relaxation) is kept per query text: a text is parsed by this adapter once.
// Pricing depends on variables and runs every time.

const (
	cacheEntries = 256
	cacheBytes   = 4 << 20 // query text kept in total; the parsed documents take a few times more
)

type analysis struct {
	doc     *document
	op      *operation   // nil when the operation cannot be chosen
	query   string       // after relaxIDs
	invalid string       // a validation error found without the schema (depth, cycle, no operation)
	err     *syntaxError // the syntax error, if any
	sdk     bool         // the text is one of the published SDKs' documents (priced by rows)
}

type analysisCache struct {
	mu    sync.RWMutex
	m     map[string]*analysis
	bytes int
}

func (c *analysisCache) get(key string) *analysis {
	c.mu.RLock()
	a := c.m[key]
	c.mu.RUnlock()
	return a
}

func (c *analysisCache) put(key string, a *analysis) {
	c.mu.Lock()
	// Dropping everything when full keeps the cache bounded without
	// bookkeeping; the working set of real clients is far below the caps.
	if c.m == nil || len(c.m) >= cacheEntries || c.bytes+len(key) > cacheBytes {
		c.m = make(map[string]*analysis, cacheEntries)
		c.bytes = 0
	}
	c.m[key] = a
	c.bytes += len(key)
	c.mu.Unlock()
}

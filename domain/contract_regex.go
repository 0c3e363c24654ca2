package domain

import (
	"container/list"
	"fmt"
	"regexp"
	"sync"
)

// patternCacheSize bounds the compiled content patterns kept in memory,
// across every contract version: a pattern is compiled once while it is in
// use, and a flood of distinct patterns cannot grow memory.
const patternCacheSize = 128

// patternCache is a small LRU of compiled patterns. Compiled RE2 programs
// are safe for concurrent use and match in linear time.
type patternCache struct {
	mu      sync.Mutex
	order   *list.List // front = most recently used; values are *patternEntry
	entries map[string]*list.Element
	max     int
}

type patternEntry struct {
	src string
	re  *regexp.Regexp
}

var patterns = newPatternCache(patternCacheSize)

func newPatternCache(max int) *patternCache {
	return &patternCache{order: list.New(), entries: map[string]*list.Element{}, max: max}
}

func (c *patternCache) get(src string) (*regexp.Regexp, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.entries[src]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*patternEntry).re, true
}

func (c *patternCache) put(src string, re *regexp.Regexp) *regexp.Regexp {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.entries[src]; ok { // compiled concurrently: keep one
		c.order.MoveToFront(el)
		return el.Value.(*patternEntry).re
	}
	c.entries[src] = c.order.PushFront(&patternEntry{src: src, re: re})
	for c.order.Len() > c.max {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.entries, last.Value.(*patternEntry).src)
	}
	return re
}

func (c *patternCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

// CompileContentPattern compiles a `must match regex` pattern (Go RE2
// syntax: no look-around or back-references; (?i) and (?s) flags work),
// 1 to 4096 bytes, from a bounded cache.
func CompileContentPattern(src string) (*regexp.Regexp, error) {
	if len(src) == 0 || len(src) > MaxRegexPatternBytes {
		return nil, fmt.Errorf("pattern must contain 1 to %d bytes", MaxRegexPatternBytes)
	}
	if re, ok := patterns.get(src); ok {
		return re, nil
	}
	re, err := regexp.Compile(src)
	if err != nil {
		return nil, fmt.Errorf("invalid pattern: %w", err)
	}
	return patterns.put(src, re), nil
}

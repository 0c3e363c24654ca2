package domain

import "sort"

// DurationHistogram counts durations by log2 bucket of milliseconds: bucket
// 0 holds durations under 1 ms, bucket b ≥ 1 those in [2^(b-1), 2^b) ms.
// The process map keeps one per node and edge, so its percentiles cost the
// same at a thousand threads and at a million.
type DurationHistogram map[int]int64

// Quantile returns the upper bound in milliseconds of the bucket holding the
// q-quantile (0 < q ≤ 1): an estimate at most twice the true value. ok is
// false when the histogram is empty.
func (h DurationHistogram) Quantile(q float64) (ms int64, ok bool) {
	var total int64
	var bs []int
	for b, n := range h {
		if b < 0 || n <= 0 {
			continue
		}
		total += n
		bs = append(bs, b)
	}
	if total == 0 {
		return 0, false
	}
	sort.Ints(bs)
	need := int64(q*float64(total) + 0.999999)
	if need < 1 {
		need = 1
	}
	var seen int64
	for _, b := range bs {
		seen += h[b]
		if seen >= need {
			if b == 0 {
				return 1, true
			}
			return int64(1) << b, true
		}
	}
	return int64(1) << bs[len(bs)-1], true
}

// EdgeAllowed reports whether the contract allows a thread to go from step
// from to step to ("" from: the thread's first step must be an entry point).
func (c Contract) EdgeAllowed(from, to string) bool {
	if _, ok := c.Step(to); !ok {
		return false
	}
	if from == "" {
		return c.IsEntryPoint(to)
	}
	return c.FreeOrder || contains(c.AllowedNext(from), to)
}

// Package testrun sets how a test package whose tests mostly wait runs.
package testrun

import (
	"flag"
	"strconv"
)

// Parallel makes up to n of the package's parallel tests run at once unless
// the command line gives -test.parallel (go test -parallel). Call it from
// TestMain before m.Run.
//
// go test's default is GOMAXPROCS, two on a 2-core CI machine, which suits
// tests that compute. The end-to-end, abuse and browser tests mostly wait
// (for engines, Chromium, PostgreSQL and the disk), so two at a time left
// the CPUs idle and made those packages the longest part of .ci/run
// (docs/contributors/testing.md, "Keeping .ci/run fast").
func Parallel(n int) {
	if !flag.Parsed() {
		flag.Parse()
	}
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", strconv.Itoa(n))
	}
}

// Package web holds the browser UI: a dependency-free single-page app (ES
// modules + CSS) embedded into the engine binary, so the UI needs no build
// step and no network at run time.
package web

import "embed"

// Files holds index.html and assets/ (served under /ui/assets/).
//
//go:embed index.html assets
var Files embed.FS

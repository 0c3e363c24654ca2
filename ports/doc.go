// Package ports declares the small interfaces the app layer needs from the
// outside world (storage, clock, randomness, the identity registry). Adapters
// implement them; the app depends only on these.
package ports

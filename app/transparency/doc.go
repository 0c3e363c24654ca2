// Package transparency serves the installation's transparency log: it signs
// checkpoints (C2SP tlog-checkpoint in a C2SP signed note, Ed25519), answers
// inclusion and consistency proofs, and gives exports the proofs of their
// steps, one handler per use case (Application). The leaves themselves are
// appended by the thread store inside the transactions that write them (see
// adapters/threadstore/tlog.go); the format is specified in
// docs/integrators/verification.md.
package transparency

package transparency

import (
	"context"
	"log/slog"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/time/rate"

	"github.com/threadengine/engine/ports"
)

// Application is the transparency log's use cases, one handler per use case
// (as identity.Application and threads.Application): each handler is a
// small type with one Handle method, in its own file (command_*.go,
// query_*.go), built by a constructor that takes only the ports it uses.
// The /v1/log/* routes and the exports call them
// (adapters/opshttp/log.go, adapters/opshttp/export.go).
type Application struct {
	Commands Commands
	Queries  Queries
}

// Commands sign checkpoints.
type Commands struct {
	SignCheckpoint SignCheckpointHandler
}

// Queries read the log: checkpoints, public keys, proofs.
type Queries struct {
	Checkpoint    CheckpointHandler
	Keys          KeysHandler
	Inclusion     InclusionHandler
	Consistency   ConsistencyHandler
	StepInclusion StepInclusionHandler
	ThreadProofs  ThreadProofsHandler
}

// ThreadVisibility is what decides which threads a caller may see: the
// read model's Threads query (readmodel.ThreadsHandler), which answers only
// the visible ones.
type ThreadVisibility interface {
	Handle(ctx context.Context, ids []string) ([]ports.ThreadView, error)
}

// Deps wires the Application.
type Deps struct {
	Log ports.TransparencyLog
	// Signer signs checkpoints; its name is the log's origin.
	Signer note.Signer
	// Verifiers are every public key of the log, newest first.
	Verifiers []string
	// Threads decides which threads a caller may see (proofs by step).
	Threads ThreadVisibility
	Clock   ports.Clock
	Logger  *slog.Logger
	// Witnesses cosign the checkpoints the engine signs on its interval
	// (none: checkpoints carry the log's signature only).
	Witnesses []Witness
	// WitnessTimeout bounds each request to a witness (0:
	// DefaultWitnessTimeout).
	WitnessTimeout time.Duration
}

// New builds the log's use cases; they share one checkpoint signer.
func New(d Deps) Application {
	if d.Clock == nil {
		d.Clock = ports.SystemClock{}
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.WitnessTimeout <= 0 {
		d.WitnessTimeout = DefaultWitnessTimeout
	}
	signer := &checkpointSigner{tree: d.Log, checkpoints: d.Log, signer: d.Signer, clock: d.Clock}
	checkpoint := NewCheckpointHandler(d.Log, signer, rate.NewLimiter(freshPerSecond, freshPerSecond))
	return Application{
		Commands: Commands{
			SignCheckpoint: NewSignCheckpointHandler(signer, d.Logger).withWitnesses(
				&witnessing{tree: d.Log, checkpoints: d.Log, list: d.Witnesses, log: d.Logger,
					clock: d.Clock, timeout: d.WitnessTimeout}),
		},
		Queries: Queries{
			Checkpoint:    checkpoint,
			Keys:          NewKeysHandler(d.Signer.Name(), d.Verifiers),
			Inclusion:     NewInclusionHandler(d.Log, checkpoint),
			Consistency:   NewConsistencyHandler(d.Log, checkpoint),
			StepInclusion: NewStepInclusionHandler(d.Log, d.Log, d.Threads, signer),
			ThreadProofs:  NewThreadProofsHandler(d.Log, d.Log, signer),
		},
	}
}

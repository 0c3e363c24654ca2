package server

import (
	"context"
	"time"

	"github.com/threadengine/engine/adapters/threadstore"
	"github.com/threadengine/engine/adapters/witnesshttp"
	"github.com/threadengine/engine/app/transparency"
	"github.com/threadengine/engine/domain"
)

// startTransparencyLog runs the log's sequencer (queued leaves into the
// tree), appends the steps recorded before the log existed (once per
// installation, in the background) and signs checkpoints while the log
// grows, until Close.
func (s *Server) startTransparencyLog(store *threadstore.Store, keys threadstore.LogKeys) {
	var witnesses []transparency.Witness
	for _, w := range s.Config.Transparency.Witnesses {
		v, err := domain.NewCosignatureVerifier(w.Key) // checked by config.Validate
		if err != nil {
			s.Log.Error("transparency log: a witness key does not parse; the witness is skipped", "url", w.URL, "err", err)
			continue
		}
		witnesses = append(witnesses, transparency.Witness{Verifier: v, Client: witnesshttp.NewClient(w.URL)})
	}
	tl := transparency.New(transparency.Deps{Log: store, Signer: keys.Signer, Verifiers: keys.Verifiers,
		Threads: s.Queries.Threads, Clock: s.Clock, Logger: s.Log, Witnesses: witnesses})
	s.TLog = &tl
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	seqDone := make(chan struct{})
	go func() {
		defer close(seqDone)
		store.RunLogSequencer(ctx, s.Config.Transparency.CheckpointInterval, func(err error) {
			s.Log.Error("transparency log: appending queued leaves failed", "err", err)
		})
	}()
	backfilled := make(chan struct{})
	go func() {
		defer close(done)
		if n, err := store.BackfillLog(ctx); err != nil && ctx.Err() == nil {
			s.Log.Error("transparency log: appending the steps recorded before it failed", "err", err)
		} else if n > 0 {
			s.Log.Info("transparency log: appended the steps recorded before it", "steps", n)
		}
		close(backfilled)
		s.TLog.Commands.SignCheckpoint.Run(ctx, s.Config.Transparency.CheckpointInterval)
	}()
	catchUpDone := make(chan struct{})
	go func() {
		defer close(catchUpDone)
		select {
		case <-backfilled:
		case <-ctx.Done():
			return
		}
		s.runLogCatchUp(ctx, store)
	}()
	s.OnClose(func() error { stop(); <-done; <-seqDone; <-catchUpDone; return nil })
}

// logCatchUpEvery is how often a replica appends the steps a binary older
// than the log wrote without their leaf (threadstore.CatchUpLog). Only a
// rolling upgrade from such a release (or a rollback to one) writes them;
// a pass reads the steps recorded since the previous one.
const logCatchUpEvery = time.Minute

// runLogCatchUp runs CatchUpLog at start and every logCatchUpEvery until
// ctx ends.
func (s *Server) runLogCatchUp(ctx context.Context, store *threadstore.Store) {
	t := time.NewTicker(logCatchUpEvery)
	defer t.Stop()
	for {
		if s.DB.Refusal() != nil {
			// The schema gate refuses this binary: it writes nothing (the
			// replicas the gate allows do the catch-up).
		} else if n, err := store.CatchUpLog(ctx, s.Clock.Now()); err != nil && ctx.Err() == nil {
			s.Log.Error("transparency log: appending steps written without their leaf failed", "err", err)
		} else if n > 0 {
			s.Log.Warn("transparency log: appended steps written without their leaf by a binary older than the log (upgrade every replica)", "steps", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

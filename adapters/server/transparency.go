package server

import (
	"context"

	"github.com/threadengine/engine/adapters/threadstore"
	"github.com/threadengine/engine/app/transparency"
)

// startTransparencyLog runs the log's sequencer (queued leaves into the
// tree), appends the steps recorded before the log existed (once per
// installation, in the background) and signs checkpoints while the log
// grows, until Close.
func (s *Server) startTransparencyLog(store *threadstore.Store, keys threadstore.LogKeys) {
	tl := transparency.New(transparency.Deps{Log: store, Signer: keys.Signer, Verifiers: keys.Verifiers,
		Threads: s.Queries.ThreadReads, Clock: s.Clock, Logger: s.Log})
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
	go func() {
		defer close(done)
		if n, err := store.BackfillLog(ctx); err != nil && ctx.Err() == nil {
			s.Log.Error("transparency log: appending the steps recorded before it failed", "err", err)
		} else if n > 0 {
			s.Log.Info("transparency log: appended the steps recorded before it", "steps", n)
		}
		s.TLog.Commands.SignCheckpoint.Run(ctx, s.Config.Transparency.CheckpointInterval)
	}()
	s.OnClose(func() error { stop(); <-done; <-seqDone; return nil })
}

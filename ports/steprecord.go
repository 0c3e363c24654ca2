package ports

import (
	"encoding/json"

	"github.com/threadengine/engine/domain"
)

// Record is the attempt as chain version 2 hashes it (its SubSteps in the
// order they were sent).
func (a Activity) Record() domain.StepRecord {
	r := domain.StepRecord{ThreadID: a.ThreadID, StepID: a.ID, Seq: a.Seq, StepName: a.StepName,
		IdempotencyKey: a.IdempotencyKey, Status: a.Status, Attempt: a.Attempt, Actor: a.Actor, ActorService: a.ActorService,
		Context: domain.JSONText(a.Context), Metadata: domain.JSONText(a.Metadata), StartedAt: a.StartedAt,
		FinishedAt: a.FinishedAt, RecordedAt: a.RecordedAt, PrevHash: a.PrevHash}
	for _, s := range a.SubSteps {
		r.SubSteps = append(r.SubSteps, domain.SubStepRecord{ID: s.ID, Name: s.Name, Status: s.Status,
			Payload: domain.JSONText(s.Payload), RecordedAt: s.RecordedAt})
	}
	return r
}

// Record is the stored attempt as chain version 2 hashes it; subs are its
// sub-steps in the order they were sent (others are ignored).
func (a ActivityView) Record(subs []SubStepView) domain.StepRecord {
	r := domain.StepRecord{ThreadID: a.ThreadID, StepID: a.ID, Seq: a.Seq, StepName: a.StepName,
		IdempotencyKey: a.IdempotencyKey, Status: a.Status, Attempt: a.Attempt, Actor: a.Actor, ActorService: a.ActorService,
		Context: json.RawMessage(a.Context), Metadata: json.RawMessage(a.Metadata), StartedAt: a.StartedAt,
		FinishedAt: a.FinishedAt, RecordedAt: a.RecordedAt, PrevHash: a.PrevHash}
	for _, s := range subs {
		if s.StepID == a.ID {
			r.SubSteps = append(r.SubSteps, domain.SubStepRecord{ID: s.ID, Name: s.Name, Status: s.Status,
				Payload: json.RawMessage(s.Payload), RecordedAt: s.RecordedAt})
		}
	}
	return r
}

// ChainLink is the attempt as the hash chain sees it (its content hash
// recomputed, never read from the stored column; its record for version 2).
func (a Activity) ChainLink() domain.ChainLink {
	rec := a.Record()
	return domain.ChainLink{ThreadID: a.ThreadID, StepID: a.ID, StepName: a.StepName,
		ContentHash: domain.ContentHash(a.Context, a.Metadata), PrevHash: a.PrevHash, Hash: a.Hash,
		RecordedAt: a.RecordedAt, Record: &rec}
}

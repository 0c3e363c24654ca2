// Package integrity verifies threads: each one's hash chain (chain version 1
// with the operator's keys, version 2 from the step records), its head
// against the count and hash its thread row records, and its steps against
// the transparency log. It is the one implementation behind
// verifyThreadIntegrity, the hash-chain fields of threads and steps, and
// exports.
package integrity

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"sort"
	"strings"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// Checker verifies threads.
type Checker struct {
	Keys domain.ChainKeyring
	// Log is the transparency log (nil: chains and heads only).
	Log Log
}

// Reader is what verification reads of the stored threads (the read side's
// ports.ThreadReads and ports.StepReads, through the caller's scope).
type Reader interface {
	SubStepReader
	GetThreads(ctx context.Context, ids []string) ([]ports.ThreadView, error)
	Activities(ctx context.Context, threadIDs []string) (map[string][]ports.ActivityView, error)
}

// SubStepReader is what verifying one attempt reads (Checker.Step).
type SubStepReader interface {
	SubSteps(ctx context.Context, steps []ports.StepKey) (map[ports.StepKey][]ports.SubStepView, error)
}

// Log is what verification reads of the transparency log: the leaves naming
// threads and whether it holds every older step.
type Log interface {
	ThreadLeaves(ctx context.Context, threadIDs []string) (map[string][]ports.LogLeafRecord, error)
	LogState(ctx context.Context) (ports.LogState, error)
}

// Links rebuilds the chain links of stored attempts with their records.
func Links(acts []ports.ActivityView, subs []ports.SubStepView) []domain.ChainLink {
	byStep := map[string][]ports.SubStepView{}
	for _, s := range subs {
		byStep[s.StepID] = append(byStep[s.StepID], s)
	}
	out := make([]domain.ChainLink, len(acts))
	for i, a := range acts {
		out[i] = Link(a, byStep[a.ID])
	}
	return out
}

// Link rebuilds one attempt's chain link (content hash recomputed from the
// stored context and metadata, never read from its column).
func Link(a ports.ActivityView, subs []ports.SubStepView) domain.ChainLink {
	rec := a.Record(subs)
	var c map[string]string
	var m map[string]any
	content := "unreadable"
	if json.Unmarshal([]byte(a.Context), &c) == nil && json.Unmarshal([]byte(a.Metadata), &m) == nil {
		content = domain.ContentHash(c, m)
	}
	return domain.ChainLink{ThreadID: a.ThreadID, StepID: a.ID, StepName: a.StepName, ContentHash: content,
		PrevHash: a.PrevHash, Hash: a.Hash, RecordedAt: a.RecordedAt, Record: &rec}
}

// subSteps loads the sub-steps of every attempt in acts.
func subSteps(ctx context.Context, st Reader, acts map[string][]ports.ActivityView) ([]ports.SubStepView, error) {
	seen := map[ports.StepKey]bool{}
	var keys []ports.StepKey
	for _, list := range acts {
		for _, a := range list {
			k := ports.StepKey{ThreadID: a.ThreadID, StepName: a.StepName, IdempotencyKey: a.IdempotencyKey}
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	if len(keys) == 0 {
		return nil, nil
	}
	m, err := st.SubSteps(ctx, keys)
	if err != nil {
		return nil, err
	}
	var out []ports.SubStepView
	for _, k := range keys {
		out = append(out, m[k]...)
	}
	return out, nil
}

// Threads verifies the threads with these ids that st shows. With unscoped
// (a reader who sees every thread) an id with no thread whose steps the log
// holds without a tombstone is reported as deleted outside the documented
// paths; otherwise such ids are simply absent from the result.
//
// The reads are not one snapshot: a step (its row, its thread's head and its
// queued leaf, in one transaction), a flush of the queue into the tree or a
// new thread may commit between any two of them, and none of these may read
// as tampering. So each check compares a read with a later read of what it
// depends on, and reads again only where a difference may be such a write:
//   - the chains are read before the thread rows (a row read later is at
//     least as new: a step moves the head in its own transaction); a chain
//     that does not end at its row's head is read again, and links past the
//     head that were not in the first read were appended meanwhile
//     (domain.CheckHeadSince);
//   - the log's state, then its leaves, are read after the chains, so every
//     step read has its leaf (queued or in the tree) by then, and every
//     older step its leaf once the state says the log holds them all; a leaf
//     whose step the chain lacks may be a step appended since, so those
//     threads' chains are read once more before it counts as missing;
//   - an id with no thread whose steps the log holds is looked up again
//     before it counts as deleted (it may have been started since).
func (c Checker) Threads(ctx context.Context, st Reader, ids []string, unscoped bool) (map[string]domain.ChainStatus, error) {
	ids = domain.ValidIDs(ids)
	out := make(map[string]domain.ChainStatus, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	first, err := st.Activities(ctx, ids)
	if err != nil {
		return nil, err
	}
	threads, err := st.GetThreads(ctx, ids)
	if err != nil {
		return nil, err
	}
	found := make([]string, 0, len(threads))
	acts := make(map[string][]ports.ActivityView, len(threads))
	var moved []string
	for _, t := range threads {
		found = append(found, t.ID)
		acts[t.ID] = first[t.ID]
		if head, n := headOf(first[t.ID]); n != t.StepCount || head != t.LastHash {
			moved = append(moved, t.ID)
		}
	}
	before := map[string]map[string]bool{}
	if len(moved) > 0 {
		again, err := st.Activities(ctx, moved)
		if err != nil {
			return nil, err
		}
		for _, id := range moved {
			before[id], acts[id] = stepIDs(first[id]), again[id]
		}
	}
	subs, err := subSteps(ctx, st, acts)
	if err != nil {
		return nil, err
	}
	links := map[string][]domain.ChainLink{}
	for _, t := range threads {
		list := acts[t.ID]
		ls := Links(list, subs)
		s := c.Keys.VerifyChain(ls)
		if b, ok := before[t.ID]; ok {
			domain.CheckHeadSince(&s, ls, b, t.StepCount, t.LastHash)
		} else {
			domain.CheckHead(&s, ls, t.StepCount, t.LastHash)
		}
		nameBroken(&s, list)
		out[t.ID], links[t.ID] = s, ls
	}
	if c.Log == nil {
		return out, nil
	}
	look := found
	if unscoped {
		look = ids
	}
	state, err := c.Log.LogState(ctx)
	if err != nil {
		return nil, err
	}
	leaves, err := c.Log.ThreadLeaves(ctx, look)
	if err != nil {
		return nil, err
	}
	late, err := appendedSince(ctx, st, acts, leaves)
	if err != nil {
		return nil, err
	}
	for _, t := range threads {
		s := out[t.ID]
		checkLog(&s, acts[t.ID], links[t.ID], leaves[t.ID], state, late)
		nameBroken(&s, acts[t.ID])
		out[t.ID] = s
	}
	if unscoped {
		gone := map[string]domain.ChainStatus{}
		var lookAgain []string
		for _, id := range ids {
			if _, ok := out[id]; ok {
				continue
			}
			if s, ok := deletedThread(leaves[id]); ok {
				gone[id] = s
				lookAgain = append(lookAgain, id)
			}
		}
		if len(lookAgain) > 0 {
			started, err := st.GetThreads(ctx, lookAgain)
			if err != nil {
				return nil, err
			}
			for _, t := range started {
				delete(gone, t.ID)
			}
			maps.Copy(out, gone)
		}
	}
	return out, nil
}

// headOf is where a thread's stored chain ends and how many links lead there.
func headOf(acts []ports.ActivityView) (string, int) {
	ls := make([]domain.ChainLink, len(acts))
	for i, a := range acts {
		ls[i] = domain.ChainLink{StepID: a.ID, PrevHash: a.PrevHash, Hash: a.Hash}
	}
	return domain.Head(ls)
}

func stepIDs(acts []ports.ActivityView) map[string]bool {
	out := make(map[string]bool, len(acts))
	for _, a := range acts {
		out[a.ID] = true
	}
	return out
}

// appendedSince returns the steps that have a leaf but were not in acts and
// are stored now: appended after acts was read (their leaves are newer than
// this verification, not missing steps).
func appendedSince(ctx context.Context, st Reader, acts map[string][]ports.ActivityView, leaves map[string][]ports.LogLeafRecord) (map[string]bool, error) {
	var lacking []string
	for id, list := range acts {
		have := stepIDs(list)
		for _, l := range leaves[id] {
			if l.Leaf.Type == domain.LeafStep && !have[l.Leaf.StepID] {
				lacking = append(lacking, id)
				break
			}
		}
	}
	if len(lacking) == 0 {
		return nil, nil
	}
	now, err := st.Activities(ctx, lacking)
	if err != nil {
		return nil, err
	}
	late := map[string]bool{}
	for _, id := range lacking {
		have := stepIDs(acts[id])
		for _, a := range now[id] {
			if !have[a.ID] {
				late[a.ID] = true
			}
		}
	}
	return late, nil
}

// nameBroken names the step identity of the broken attempt.
func nameBroken(s *domain.ChainStatus, acts []ports.ActivityView) {
	for _, a := range acts {
		if s.BrokenStepID != "" && a.ID == s.BrokenStepID {
			s.BrokenStepName, s.BrokenIdempotencyKey = a.StepName, a.IdempotencyKey
		}
	}
}

// checkLog compares a thread's stored attempts with its leaves: every leaf's
// step must be stored with the hash the leaf names, every leaf must be the
// one the tree holds, and (once the log holds every older step) every
// stored step must have a leaf. The leaves of late steps (appended after
// acts was read) are left for the next verification.
func checkLog(s *domain.ChainStatus, acts []ports.ActivityView, links []domain.ChainLink, leaves []ports.LogLeafRecord, state ports.LogState, late map[string]bool) {
	byID := make(map[string]ports.ActivityView, len(acts))
	for _, a := range acts {
		byID[a.ID] = a
	}
	records := make(map[string]*domain.StepRecord, len(links))
	for _, l := range links {
		records[l.StepID] = l.Record
	}
	logged := map[string]bool{}
	ls := &domain.ChainLogStatus{LastIndex: -1}
	var missing []domain.MissingStep
	for _, l := range leaves {
		if l.Leaf.Type != domain.LeafStep || late[l.Leaf.StepID] {
			continue
		}
		ls.Leaves++
		if l.Index >= 0 {
			ls.LastIndex = l.Index
		}
		logged[l.Leaf.StepID] = true
		if domain.LeafHash(l.Data) != l.Stored {
			s.Fail(domain.ChainLogMismatch, l.Leaf.StepID, nil, fmt.Sprintf(
				"Log leaf %d (step seq %d, %s) is not the leaf the log's tree holds: the leaf row was edited", l.Index, l.Leaf.Seq, l.Leaf.StepID))
			continue
		}
		a, ok := byID[l.Leaf.StepID]
		if !ok {
			missing = append(missing, domain.MissingStep{StepID: l.Leaf.StepID, Seq: l.Leaf.Seq, Hash: l.Leaf.Hash, LogIndex: l.Index})
			continue
		}
		at := a.RecordedAt
		if a.Hash != l.Leaf.Hash || a.Seq != l.Leaf.Seq {
			s.Fail(domain.ChainLogMismatch, a.ID, &at, fmt.Sprintf(
				"Step %s (%s, seq %d) differs from its log leaf %d: stored hash %s, logged %s", a.StepName, a.ID, a.Seq,
				l.Index, short(a.Hash), short(l.Leaf.Hash)))
			continue
		}
		if l.Leaf.RecordHash != "" {
			if rec := records[a.ID]; rec != nil {
				if h, err := domain.StepHash(*rec); err != nil || h != l.Leaf.RecordHash {
					s.Fail(domain.ChainLogMismatch, a.ID, &at, fmt.Sprintf(
						"Step %s (%s, seq %d) was changed since the transparency log recorded it (leaf %d)", a.StepName, a.ID, a.Seq, l.Index))
				}
			}
		}
	}
	for _, a := range acts {
		if !logged[a.ID] {
			ls.Unlogged++
		}
	}
	s.Log = ls
	if len(missing) > 0 {
		// The head check may have named the newest missing step without its
		// id: the log's list replaces it.
		s.Missing = missing
		s.Fail(domain.ChainMissingSteps, "", nil, "Steps missing from the store but recorded in the transparency log: "+describe(missing))
	}
	if state.Backfilled && ls.Unlogged > 0 {
		for _, a := range acts {
			if !logged[a.ID] {
				at := a.RecordedAt
				s.Fail(domain.ChainNotInLog, a.ID, &at, fmt.Sprintf(
					"Step %s (%s, seq %d) is not in the transparency log: it was not written by the engine", a.StepName, a.ID, a.Seq))
				break
			}
		}
	}
}

// deletedThread reports a thread whose steps the log holds, with no
// tombstone: deleted outside DELETE /v1/threads/{id} and retention.
func deletedThread(leaves []ports.LogLeafRecord) (domain.ChainStatus, bool) {
	var missing []domain.MissingStep
	for _, l := range leaves {
		switch l.Leaf.Type {
		case domain.LeafThreadDeleted:
			return domain.ChainStatus{}, false
		case domain.LeafStep:
			missing = append(missing, domain.MissingStep{StepID: l.Leaf.StepID, Seq: l.Leaf.Seq, Hash: l.Leaf.Hash, LogIndex: l.Index})
		}
	}
	if len(missing) == 0 {
		return domain.ChainStatus{}, false
	}
	s := domain.ChainStatus{Code: domain.ChainVerified, Missing: missing,
		Log: &domain.ChainLogStatus{Leaves: len(missing), LastIndex: missing[len(missing)-1].LogIndex}}
	s.Fail(domain.ChainThreadDeleted, "", nil, fmt.Sprintf("Thread deleted outside the delete and retention paths: "+
		"the transparency log holds its %d steps and no tombstone (%s)", len(missing), describe(missing)))
	return s, true
}

func describe(ms []domain.MissingStep) string {
	sorted := append([]domain.MissingStep(nil), ms...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Seq < sorted[j].Seq })
	var b strings.Builder
	for i, m := range sorted {
		if i == 10 {
			fmt.Fprintf(&b, ", and %d more", len(sorted)-10)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		if m.LogIndex < 0 {
			fmt.Fprintf(&b, "seq %d (%s, queued for the log)", m.Seq, m.StepID)
		} else {
			fmt.Fprintf(&b, "seq %d (%s, log index %d)", m.Seq, m.StepID, m.LogIndex)
		}
	}
	return b.String()
}

func short(h string) string {
	if len(h) > 24 {
		return h[:24] + "…"
	}
	return h
}

// Step verifies one stored attempt's link (not the chain it is in).
func (c Checker) Step(ctx context.Context, st SubStepReader, a ports.ActivityView) (string, error) {
	var subs []ports.SubStepView
	if strings.HasPrefix(a.Hash, domain.StepHashPrefix) {
		m, err := st.SubSteps(ctx, []ports.StepKey{{ThreadID: a.ThreadID, StepName: a.StepName, IdempotencyKey: a.IdempotencyKey}})
		if err != nil {
			return "", err
		}
		for _, list := range m {
			subs = append(subs, list...)
		}
	}
	return c.Keys.VerifyLink(Link(a, subs)), nil
}

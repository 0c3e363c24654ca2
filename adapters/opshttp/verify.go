package opshttp

// The offline verifier of exports (threadengine verify): everything an
// auditor holding only the log's public key, an export and (optionally) a
// checkpoint saved earlier can check, without a database, a secret or a
// network. It reads the export format this package writes and follows the
// steps of docs/integrators/verification.md.

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/threadengine/engine/domain"
)

// exportLine is one line of an export as the verifier reads it (the
// export's own types: a thread, or the error line that ends a cut stream).
type exportLine struct {
	ExportJSON
	Error   *StreamError `json:"error"`
	Skipped *Skipped     `json:"skipped"`
}

// ThreadReport is what the offline verifier found about one exported thread.
type ThreadReport struct {
	ThreadID string
	Steps    int
	// Keyed counts version-1 (HMAC) links: their content cannot be checked
	// without the operator's key; their linkage and log inclusion are.
	Keyed      int
	Checkpoint domain.Checkpoint
	Failures   []string
	Warnings   []string
}

// OK reports whether nothing failed.
func (r ThreadReport) OK() bool { return len(r.Failures) == 0 }

// OfflineInput is what an offline verification is given.
type OfflineInput struct {
	// Export is one thread export (JSON) or an NDJSON stream of them.
	Export io.Reader
	// Keys are the log's verifier keys ("<name>+<hash>+<base64>").
	Keys []string
	// Saved is a signed checkpoint the auditor kept from earlier ("": none).
	Saved string
	// Witnesses are witness verifier keys (C2SP cosignature keys): the
	// export's checkpoints must carry a valid cosignature of each.
	Witnesses []string
}

// VerifyOffline checks every thread of an export (docs/integrators/verification.md).
func VerifyOffline(in OfflineInput) ([]ThreadReport, error) {
	var vs []note.Verifier
	for _, k := range in.Keys {
		v, err := note.NewVerifier(strings.TrimSpace(k))
		if err != nil {
			return nil, fmt.Errorf("log key %q: %w", k, err)
		}
		vs = append(vs, v)
	}
	if len(vs) == 0 {
		return nil, fmt.Errorf("no log key given")
	}
	keys := note.VerifierList(vs...)
	var witnesses []note.Verifier
	for _, k := range in.Witnesses {
		v, err := domain.NewCosignatureVerifier(strings.TrimSpace(k))
		if err != nil {
			return nil, fmt.Errorf("witness key %q: %w", k, err)
		}
		witnesses = append(witnesses, v)
	}
	var saved *domain.Checkpoint
	if strings.TrimSpace(in.Saved) != "" {
		c, err := openCheckpoint(in.Saved, keys)
		if err != nil {
			return nil, fmt.Errorf("saved checkpoint: %w", err)
		}
		saved = &c
	}
	var out []ThreadReport
	dec := json.NewDecoder(bufio.NewReader(in.Export))
	for {
		var d exportLine
		err := dec.Decode(&d)
		if err == io.EOF {
			break
		}
		if err != nil {
			return out, fmt.Errorf("export: thread %d: %w", len(out)+1, err)
		}
		if d.Error != nil {
			return out, fmt.Errorf("export: the stream ends with an error: %s: %s", d.Error.Code, d.Error.Message)
		}
		if d.Skipped != nil {
			// Not in the export, so not verified: a failure, never a pass.
			out = append(out, ThreadReport{ThreadID: d.Skipped.ID, Failures: []string{fmt.Sprintf(
				"not exported: its %d bytes are over %s (%d); export it alone with a higher limits.graphql.export_thread_max_bytes",
				d.Skipped.Bytes, d.Skipped.Limit, d.Skipped.Max)}})
			continue
		}
		out = append(out, verifyDoc(d, keys, witnesses, saved))
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("export: no thread in it")
	}
	return out, nil
}

// openCheckpoint verifies a signed checkpoint with keys and parses it; its
// origin must be the signing key's name.
func openCheckpoint(text string, keys note.Verifiers) (domain.Checkpoint, error) {
	n, err := note.Open([]byte(text), keys)
	if err != nil {
		return domain.Checkpoint{}, fmt.Errorf("signature does not verify with the given log key: %w", err)
	}
	c, err := domain.ParseCheckpoint(n.Text)
	if err != nil {
		return domain.Checkpoint{}, err
	}
	if n.Sigs[0].Name != c.Origin {
		return domain.Checkpoint{}, fmt.Errorf("checkpoint of log %q is signed by key %q", c.Origin, n.Sigs[0].Name)
	}
	return c, nil
}

func decodeProof(ss []string) (tlog.RecordProof, error) {
	out := make(tlog.RecordProof, len(ss))
	for i, s := range ss {
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil || len(b) != tlog.HashSize {
			return nil, fmt.Errorf("proof hash %d is not 32 bytes of base64", i)
		}
		copy(out[i][:], b)
	}
	return out, nil
}

func verifyDoc(d exportLine, keys note.Verifiers, witnesses []note.Verifier, saved *domain.Checkpoint) ThreadReport {
	r := ThreadReport{ThreadID: d.Thread.ID, Steps: len(d.Attempts)}
	fail := func(f string, a ...any) { r.Failures = append(r.Failures, fmt.Sprintf(f, a...)) }
	// 1. Every step's hash, and the chain.
	subs := map[string][]domain.SubStepRecord{}
	for _, s := range d.SubSteps {
		subs[s.StepID] = append(subs[s.StepID], domain.SubStepRecord{ID: s.ID, Name: s.Name, Status: s.Status,
			Payload: s.Payload, RecordedAt: s.RecordedAt})
	}
	links := make([]domain.ChainLink, 0, len(d.Attempts))
	records := map[string]domain.StepRecord{}
	for _, a := range d.Attempts {
		rec := domain.StepRecord{ThreadID: d.Thread.ID, StepID: a.ID, Seq: a.Seq, StepName: a.StepName,
			IdempotencyKey: a.IdempotencyKey, Status: a.Status, Attempt: a.Attempt, Actor: a.Actor, ActorService: a.ActorService,
			Context: a.Context, Metadata: a.Metadata, StartedAt: a.StartedAt, FinishedAt: a.FinishedAt, RecordedAt: a.RecordedAt,
			PrevHash: a.PrevHash, SubSteps: subs[a.ID]}
		links = append(links, domain.ChainLink{ThreadID: d.Thread.ID, StepID: a.ID, StepName: a.StepName, PrevHash: a.PrevHash,
			Hash: a.Hash, RecordedAt: a.RecordedAt, Record: &rec})
		records[a.ID] = rec
		switch {
		case domain.IsStepHash(a.Hash):
			if h, err := domain.StepHash(rec); err != nil || h != a.Hash {
				fail("step seq %d (%s, %s): its hash does not match its content", a.Seq, a.StepName, a.ID)
			}
		case strings.HasPrefix(a.Hash, domain.HashPrefix):
			// Checked against its leaf's record_hash below.
		default:
			fail("step seq %d (%s, %s): unknown hash format", a.Seq, a.StepName, a.ID)
		}
	}
	// Links whose content failed above stop the chain walk there; report
	// the chain's own defects (disconnected, forked) besides.
	byHash := domain.ChainKeyring{}.VerifyChain(links)
	if byHash.Code == domain.ChainIncomplete {
		fail("%s", byHash.Error)
	}
	// 2. Completeness against the thread's recorded head.
	if head, n := domain.Head(links); n != d.Thread.StepCount || head != d.Thread.LastHash || n != len(links) {
		fail("chain incomplete: the thread records %d steps ending at %s; the export's chain from the first step reaches %d of its %d steps, ending at %s",
			d.Thread.StepCount, d.Thread.LastHash, n, len(links), head)
	}
	// 3. The log: checkpoint signature, every leaf's inclusion, every step's leaf.
	if d.Log == nil {
		fail("the export carries no transparency-log section: nothing proves these steps are in the operator's log")
		return r
	}
	c, err := openCheckpoint(d.Log.Checkpoint, keys)
	if err != nil {
		fail("checkpoint: %v", err)
		return r
	}
	r.Checkpoint = c
	for _, w := range witnesses {
		if _, err := note.Open([]byte(d.Log.Checkpoint), note.VerifierList(w)); err != nil {
			fail("checkpoint %d: no valid cosignature of witness %s", c.Size, w.Name())
		}
	}
	leafOf := map[string]domain.LogLeaf{}
	leafIdx := map[string]int64{}
	for _, l := range d.Log.Leaves {
		p, err := decodeProof(l.Proof)
		if err != nil {
			fail("log leaf %d: %v", l.Index, err)
			continue
		}
		if err := tlog.CheckRecord(p, c.Size, c.Root, l.Index, domain.LeafHash([]byte(l.Data))); err != nil {
			fail("log leaf %d: not in checkpoint %d (%v)", l.Index, c.Size, err)
			continue
		}
		leaf, err := domain.ParseLogLeaf([]byte(l.Data))
		if err != nil {
			fail("log leaf %d: %v", l.Index, err)
			continue
		}
		if leaf.ThreadID != d.Thread.ID {
			fail("log leaf %d names thread %s, not this one", l.Index, leaf.ThreadID)
			continue
		}
		switch leaf.Type {
		case domain.LeafStep:
			leafOf[leaf.StepID], leafIdx[leaf.StepID] = leaf, l.Index
		case domain.LeafThreadDeleted:
			fail("log leaf %d is the thread's tombstone (deleted %s, reason %s), yet the thread was exported", l.Index,
				domain.RecordTime(leaf.DeletedAt), leaf.Reason)
		}
	}
	present := map[string]bool{}
	for _, a := range d.Attempts {
		present[a.ID] = true
		leaf, ok := leafOf[a.ID]
		switch {
		case !ok:
			fail("step seq %d (%s, %s) is not in the log's checkpoint %d", a.Seq, a.StepName, a.ID, c.Size)
		case leaf.Hash != a.Hash || leaf.Seq != a.Seq:
			fail("step seq %d (%s, %s) differs from its log leaf %d (logged hash %s, seq %d)", a.Seq, a.StepName, a.ID,
				leafIdx[a.ID], leaf.Hash, leaf.Seq)
		case strings.HasPrefix(a.Hash, domain.HashPrefix) && leaf.RecordHash != "":
			if h, err := domain.StepHash(records[a.ID]); err != nil || h != leaf.RecordHash {
				fail("step seq %d (%s, %s) was changed since the log recorded it (leaf %d)", a.Seq, a.StepName, a.ID, leafIdx[a.ID])
			}
		case strings.HasPrefix(a.Hash, domain.HashPrefix):
			r.Keyed++
		}
	}
	if r.Keyed > 0 {
		r.Warnings = append(r.Warnings, fmt.Sprintf("%d steps use chain version 1 (HMAC with the operator's key) and carry no record hash: "+
			"their content is checked only by the operator; their order and presence in the log are checked here", r.Keyed))
	}
	var missing []string
	for id, leaf := range leafOf {
		if !present[id] {
			missing = append(missing, fmt.Sprintf("seq %d (%s, log index %d)", leaf.Seq, id, leafIdx[id]))
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		fail("steps in the log but missing from the export: %s", strings.Join(missing, ", "))
	}
	// 4. Consistency with the checkpoint the auditor saved.
	if saved != nil {
		checkConsistency(&r, d, c, *saved)
	}
	return r
}

func checkConsistency(r *ThreadReport, d exportLine, c, saved domain.Checkpoint) {
	fail := func(f string, a ...any) { r.Failures = append(r.Failures, fmt.Sprintf(f, a...)) }
	switch {
	case saved.Origin != c.Origin:
		fail("the saved checkpoint is of log %q, the export's of %q", saved.Origin, c.Origin)
	case saved.Size == 0:
		// Every tree extends the empty one.
	case saved.Size == c.Size:
		if saved.Root != c.Root {
			fail("the log was rewritten: the saved checkpoint and the export's have size %d and different root hashes", c.Size)
		}
	case saved.Size > c.Size:
		fail("the export's checkpoint (size %d) is older than the saved one (size %d): fetch a new export", c.Size, saved.Size)
	case d.Log.Consistency == nil || d.Log.Consistency.Old == nil || d.Log.Consistency.New == nil ||
		*d.Log.Consistency.Old != saved.Size || *d.Log.Consistency.New != c.Size:
		fail("the export carries no consistency proof from the saved checkpoint's size %d to %d (export with ?since=%d)",
			saved.Size, c.Size, saved.Size)
	default:
		p, err := decodeProof(d.Log.Consistency.Proof)
		if err == nil {
			err = tlog.CheckTree(tlog.TreeProof(p), c.Size, c.Root, saved.Size, saved.Root)
		}
		if err != nil {
			fail("the log was rewritten since the saved checkpoint (size %d): the consistency proof to size %d does not verify (%v)",
				saved.Size, c.Size, err)
		}
	}
}

// FormatReports writes one line per thread and a summary; ok is false when
// any check failed.
func FormatReports(w io.Writer, reports []ThreadReport) (ok bool) {
	ok = true
	var b bytes.Buffer
	steps := 0
	for _, r := range reports {
		steps += r.Steps
		if r.OK() {
			fmt.Fprintf(&b, "ok   thread %s: %d steps, chain complete, every step in checkpoint %s #%d\n", r.ThreadID, r.Steps,
				r.Checkpoint.Origin, r.Checkpoint.Size)
		} else {
			ok = false
			fmt.Fprintf(&b, "FAIL thread %s:\n", r.ThreadID)
			for _, f := range r.Failures {
				fmt.Fprintf(&b, "     - %s\n", f)
			}
		}
		for _, wn := range r.Warnings {
			fmt.Fprintf(&b, "     note: %s\n", wn)
		}
	}
	if ok {
		fmt.Fprintf(&b, "verified %d threads, %d steps\n", len(reports), steps)
	} else {
		fmt.Fprintf(&b, "verification FAILED (%d threads, %d steps checked)\n", len(reports), steps)
	}
	_, _ = w.Write(b.Bytes())
	return ok
}

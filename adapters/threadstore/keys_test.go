package threadstore_test

import (
	"context"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/sqldb"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/adapters/threadstore"
	"github.com/threadengine/engine/app/authz"
	threadsapp "github.com/threadengine/engine/app/threads"
	"github.com/threadengine/engine/domain"
)

const (
	secretA = "secret-a-0123456789abcdef0123456789abcdef"
	secretB = "secret-b-0123456789abcdef0123456789abcdef"
)

// Two engines on one database (two data directories) get the same generated
// key; a configured key that differs from the recorded one is refused; a
// rotation keeps the old version.
func TestChainKeysSharedThroughDatabase(t *testing.T) {
	t.Parallel()
	for _, d := range sqldbtest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			db := sqldbtest.Open(t, d)
			ctx, now := context.Background(), time.Now()
			var wg sync.WaitGroup
			got := make([]domain.ChainKeys, 4)
			errs := make([]error, 4)
			for i := range got {
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					got[i], errs[i] = threadstore.LoadChainKeys(ctx, db, threadstore.KeyConfig{}, t.TempDir(), now)
				}(i)
			}
			wg.Wait()
			for i := range got {
				if errs[i] != nil {
					t.Fatal(errs[i])
				}
				if got[i].Current != "1" || len(got[i].Secrets["1"]) != 32 || string(got[i].Secrets["1"]) != string(got[0].Secrets["1"]) {
					t.Fatalf("replica %d has key %+v, replica 0 %+v", i, got[i], got[0])
				}
			}
			// Configuring version 1 with another key is refused, naming both fingerprints.
			_, err := threadstore.LoadChainKeys(ctx, db, threadstore.KeyConfig{Secret: secretA}, t.TempDir(), now)
			if err == nil || !strings.Contains(err.Error(), "not the key this installation's database records") {
				t.Fatalf("mismatched key: %v", err)
			}
			// Rotation: a configured version 2 joins the generated version 1.
			k2, err := threadstore.LoadChainKeys(ctx, db, threadstore.KeyConfig{Secret: secretA, Version: "2"}, t.TempDir(), now)
			if err != nil || k2.Current != "2" || string(k2.Secrets["2"]) != secretA || string(k2.Secrets["1"]) != string(got[0].Secrets["1"]) {
				t.Fatalf("rotated %+v %v", k2, err)
			}
			// Another replica with a different version-2 key is refused.
			if _, err := threadstore.LoadChainKeys(ctx, db, threadstore.KeyConfig{Secret: secretB, Version: "2"}, t.TempDir(), now); err == nil {
				t.Fatal("a replica with another version-2 key started")
			}
			// A replica without configuration cannot verify version 2: refused.
			if _, err := threadstore.LoadChainKeys(ctx, db, threadstore.KeyConfig{}, t.TempDir(), now); err == nil ||
				!strings.Contains(err.Error(), "version 2") {
				t.Fatalf("unconfigured replica after a configured rotation: %v", err)
			}
			// Version 3 configured, 2 retired into previous secrets.
			k3, err := threadstore.LoadChainKeys(ctx, db, threadstore.KeyConfig{Secret: secretB, Version: "3",
				Previous: map[string]string{"2": secretA}}, t.TempDir(), now)
			if err != nil || k3.Current != "3" || len(k3.Secrets) != 3 {
				t.Fatalf("second rotation %+v %v", k3, err)
			}
		})
	}
}

// An engine upgraded from a version that kept the generated key in the data
// directory keeps using it (its chains stay verifiable), now shared.
func TestChainKeysImportLegacyFile(t *testing.T) {
	t.Parallel()
	db := sqldbtest.Open(t, "sqlite")
	dir := t.TempDir()
	legacy := make([]byte, 32)
	legacy[0] = 7
	if err := os.WriteFile(filepath.Join(dir, threadstore.HashChainKeyFile), []byte(hex.EncodeToString(legacy)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	k, err := threadstore.LoadChainKeys(context.Background(), db, threadstore.KeyConfig{}, dir, time.Now())
	if err != nil || string(k.Secrets["1"]) != string(legacy) {
		t.Fatalf("%+v %v", k, err)
	}
	other, err := threadstore.LoadChainKeys(context.Background(), db, threadstore.KeyConfig{}, t.TempDir(), time.Now())
	if err != nil || string(other.Secrets["1"]) != string(legacy) {
		t.Fatalf("second engine %+v %v", other, err)
	}
}

// An installation upgraded from per-replica keys: each replica's data
// directory holds its own version-1 key. The first becomes the signing key;
// every other one is recorded as an alternate when its replica starts, so
// the chains each replica wrote before the upgrade verify on all of them.
func TestChainKeysImportEveryReplicasLegacyFile(t *testing.T) {
	sqldbtest.ForEachDialect(t, func(t *testing.T, d sqldb.Dialect) {
		db := sqldbtest.Open(t, d)
		ctx, now := context.Background(), time.Now()
		dirs, legacy := [2]string{t.TempDir(), t.TempDir()}, [2][]byte{}
		for i := range dirs {
			legacy[i] = make([]byte, 32)
			legacy[i][0] = byte(10 + i)
			if err := os.WriteFile(filepath.Join(dirs[i], threadstore.HashChainKeyFile), []byte(hex.EncodeToString(legacy[i])), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		// Replica B's chain, written before the upgrade with its own key.
		link := domain.ChainLink{ThreadID: "t", StepID: "s", StepName: "pay", ContentHash: domain.ContentHash(nil, nil), RecordedAt: now}
		link.Hash = domain.ChainHash(legacy[1], "1", link)
		a, err := threadstore.LoadChainKeys(ctx, db, threadstore.KeyConfig{}, dirs[0], now)
		if err != nil || string(a.Secrets["1"]) != string(legacy[0]) {
			t.Fatalf("replica A: %v %v", a.Current, err)
		}
		if st := domain.VerifyChain(a.Secrets, []domain.ChainLink{link}); st.Verified {
			t.Fatal("B's chain verified before B's key was known: the test proves nothing")
		}
		b, err := threadstore.LoadChainKeys(ctx, db, threadstore.KeyConfig{}, dirs[1], now)
		if err != nil || string(b.Secrets["1"]) != string(legacy[0]) || b.Current != "1" {
			t.Fatalf("replica B signs with %q (%v), want A's version 1", b.Current, err)
		}
		again, err := threadstore.LoadChainKeys(ctx, db, threadstore.KeyConfig{}, dirs[0], now) // A restarts
		if err != nil {
			t.Fatal(err)
		}
		for name, k := range map[string]domain.ChainKeys{"B": b, "A restarted": again} {
			if st := domain.VerifyChain(k.Secrets, []domain.ChainLink{link}); !st.Verified {
				t.Fatalf("%s: B's old chain: %s", name, st.Error)
			}
		}
		tampered := link
		tampered.StepName = "refund"
		if st := domain.VerifyChain(b.Secrets, []domain.ChainLink{tampered}); st.Verified || !strings.Contains(st.Error, "tampering") {
			t.Fatalf("tampered link: %+v", st)
		}
		if _, err := threadstore.LoadChainKeys(ctx, db, threadstore.KeyConfig{}, dirs[1], now); err != nil { // B restarts: no second row
			t.Fatal(err)
		}
	})
}

// A chain signed with version 1 verifies after rotating to version 2, and an
// invitation signed before the rotation is still accepted.
func TestRotationKeepsChainsAndInvitations(t *testing.T) {
	t.Parallel()
	threads, _, ctx := setup(t, "sqlite")
	v1 := domain.ChainKeys{Current: "1", Secrets: map[string][]byte{"1": []byte(secretA)}}
	threads.UseChainKeys(v1)
	th, err := threads.Application().Commands.StartThread.Handle(ctx, threadsapp.StartThreadInput{Label: "r"})
	if err != nil {
		t.Fatal(err)
	}
	record := func(key string) {
		if _, err := threads.Application().Commands.RecordStep.Handle(ctx, threadsapp.RecordStepInput{ThreadID: th.ID, StepName: "s", Status: "success",
			IdempotencyKey: key, Context: map[string]string{}}); err != nil {
			t.Fatal(err)
		}
	}
	record("a")
	inv, err := threads.Application().Commands.InviteParty.Handle(ctx, threadsapp.InviteInput{ThreadID: th.ID, Role: "r"})
	if err != nil {
		t.Fatal(err)
	}
	threads.UseChainKeys(domain.ChainKeys{Current: "2", Secrets: map[string][]byte{"1": []byte(secretA), "2": []byte(secretB)}})
	record("b")
	st, err := threads.Application().Queries.VerifyIntegrity.Handle(ctx, th.ID)
	if err != nil || !st.Verified || st.TotalEvents != 2 {
		t.Fatalf("after rotation: %+v %v", st, err)
	}
	other := authz.WithPrincipal(context.Background(), domain.Principal{Kind: domain.PrincipalUser, ID: "u2", Role: domain.RoleMember})
	if _, err := threads.Application().Commands.JoinThread.Handle(other, threadsapp.JoinInput{Token: inv.Token}); err != nil {
		t.Fatalf("invitation signed before rotation: %v", err)
	}
}

package threadquery_test

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/threadengine/engine/adapters/graphqlapi/graphqltest"
	"github.com/threadengine/engine/adapters/sqldb/sqldbtest"
	"github.com/threadengine/engine/adapters/threadquery"
	"github.com/threadengine/engine/adapters/threadstore"
	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/app/threads"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// A principal is a party of the threads it started and of those it holds an
// unexpired access row on; PartyThreads and ListThreads' Party filter agree.
func TestPartyOf(t *testing.T) {
	for _, d := range sqldbtest.Dialects(t) {
		t.Run(string(d), func(t *testing.T) {
			t.Parallel()
			db := sqldbtest.Open(t, d)
			store := threadstore.New(db)
			th := threads.New(store, nil, nil, []byte("test-hash-chain-secret-0123456789abcdef"), slog.New(slog.NewTextHandler(io.Discard, nil)))
			as := func(id string) context.Context {
				return authz.WithPrincipal(context.Background(), domain.Principal{Kind: domain.PrincipalServiceAccount, ID: id, Role: domain.RoleMember})
			}
			a, err := graphqltest.SeedThread(as("s1"), th, "a", 1)
			if err != nil {
				t.Fatal(err)
			}
			b, err := graphqltest.SeedThread(as("s2"), th, "b", 1)
			if err != nil {
				t.Fatal(err)
			}
			now := time.Now().UTC()
			past, future := now.Add(-time.Minute), now.Add(time.Hour)
			for _, g := range []struct {
				thread, principal string
				expires           *time.Time
			}{
				{b.ID, "s1", &past},   // expired: not a party any more
				{a.ID, "s3", &future}, // joined by invitation
				{b.ID, "s3", nil},     // joined by id (no expiry)
			} {
				// Parties are written the way joins write them: added to the
				// aggregate inside the store's thread update.
				_, err := store.UpdateThread(context.Background(), g.thread, func(t *domain.Thread) (ports.ThreadEffects, error) {
					t.Parties = append(t.Parties, domain.Party{PrincipalKind: string(domain.PrincipalServiceAccount), PrincipalID: g.principal,
						Role: "r", Level: domain.AccessParticipant, GrantedBy: "s2", GrantedAt: now, ExpiresAt: g.expires})
					return ports.ThreadEffects{}, nil
				})
				if err != nil {
					t.Fatal(err)
				}
			}
			s := threadquery.New(db)
			ctx := context.Background()
			for who, want := range map[string][]string{"s1": {a.ID}, "s2": {b.ID}, "s3": {a.ID, b.ID}, "nobody": nil} {
				p := ports.PartyOf{PrincipalID: who, Now: now}
				got, err := s.PartyThreads(ctx, p, []string{a.ID, b.ID, "missing"})
				if err != nil {
					t.Fatal(err)
				}
				slices.Sort(got)
				w := slices.Clone(want)
				slices.Sort(w)
				if !slices.Equal(got, w) {
					t.Errorf("PartyThreads(%s) = %v, want %v", who, got, w)
				}
				page, err := s.ListThreads(ctx, ports.ThreadFilter{Party: &p, Limit: 10})
				if err != nil {
					t.Fatal(err)
				}
				total, err := s.CountThreads(ctx, ports.ThreadFilter{Party: &p, Limit: 10}, 100)
				if err != nil {
					t.Fatal(err)
				}
				var ids []string
				for _, v := range page {
					ids = append(ids, v.ID)
				}
				slices.Sort(ids)
				if total != len(want) || !slices.Equal(ids, w) {
					t.Errorf("ListThreads(party %s) = %v (total %d), want %v", who, ids, total, w)
				}
				// The count stops at its bound, still counting only the party's threads.
				if total, err := s.CountThreads(ctx, ports.ThreadFilter{Party: &p}, 1); err != nil || total != min(1, len(want)) {
					t.Errorf("CountThreads(party %s, up to 1) = %d %v, want %d", who, total, err, min(1, len(want)))
				}
			}
			// The grant's expiry is judged at the Now given.
			got, err := s.PartyThreads(ctx, ports.PartyOf{PrincipalID: "s1", Now: past.Add(-time.Minute)}, []string{b.ID})
			if err != nil || len(got) != 1 {
				t.Errorf("s1 before its grant expired: %v %v", got, err)
			}
		})
	}
}

package readmodel_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/app/readmodel"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// actorUsers and actorSAs are in-memory principal tables; only the lookups
// ResolveActors uses are implemented.
type actorUsers struct {
	ports.Users
	byID map[string]domain.User
	err  error
}

func (u actorUsers) GetUser(_ context.Context, id string) (domain.User, error) {
	if u.err != nil {
		return domain.User{}, u.err
	}
	if x, ok := u.byID[id]; ok {
		return x, nil
	}
	return domain.User{}, domain.NotFound("user")
}

type actorSAs struct {
	ports.ServiceAccounts
	byID map[string]domain.ServiceAccount
}

func (s actorSAs) GetServiceAccount(_ context.Context, id string) (domain.ServiceAccount, error) {
	if x, ok := s.byID[id]; ok {
		return x, nil
	}
	return domain.ServiceAccount{}, domain.NotFound("service account")
}

func TestResolveActors(t *testing.T) {
	t.Parallel()
	users := actorUsers{byID: map[string]domain.User{
		"u1": {ID: "u1", Email: "ada@example.com", FullName: "Ada Lovelace"},
		"u2": {ID: "u2", Email: "noname@example.com"},
	}}
	sas := actorSAs{byID: map[string]domain.ServiceAccount{"s1": {ID: "s1", Name: "billing-worker", Role: domain.RoleMember, Active: true}}}
	actors := readmodel.NewActors(users, sas)

	viewer := domain.Principal{Kind: domain.PrincipalUser, ID: "v", Role: domain.RoleViewer}
	service := domain.Principal{Kind: domain.PrincipalServiceAccount, ID: "s9", Role: domain.RoleViewer}
	many := make([]string, readmodel.MaxResolveActors+1)
	for i := range many {
		many[i] = fmt.Sprint("id", i)
	}

	tests := []struct {
		name     string
		caller   *domain.Principal
		ids      []string
		want     readmodel.ResolvedActors
		wantCode domain.Code
	}{
		{
			name: "users and service accounts keep caller order, unknown ids are unresolved", caller: &viewer,
			ids: []string{"s1", "u1", "billing-service", "u2"},
			want: readmodel.ResolvedActors{
				Actors: []readmodel.Actor{
					{ID: "s1", Name: "billing-worker", Type: domain.PrincipalServiceAccount},
					{ID: "u1", Name: "Ada Lovelace", Type: domain.PrincipalUser},
					{ID: "u2", Name: "noname@example.com", Type: domain.PrincipalUser},
				},
				Unresolved: []string{"billing-service"},
			},
		},
		{
			name: "duplicates and blanks are dropped", caller: &viewer, ids: []string{"u1", " u1 ", "", "u1"},
			want: readmodel.ResolvedActors{Actors: []readmodel.Actor{{ID: "u1", Name: "Ada Lovelace", Type: domain.PrincipalUser}}, Unresolved: []string{}},
		},
		{
			name: "a service account never sees an email in place of a missing name", caller: &service, ids: []string{"u2"},
			want: readmodel.ResolvedActors{Actors: []readmodel.Actor{{ID: "u2", Name: "", Type: domain.PrincipalUser}}, Unresolved: []string{}},
		},
		{name: "no ids", caller: &viewer, ids: []string{" "}, wantCode: domain.CodeValidationFailed},
		{name: "too many ids", caller: &viewer, ids: many, wantCode: domain.CodeValidationFailed},
		{name: "anonymous", ids: []string{"u1"}, wantCode: domain.CodeUnauthenticated},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			if tt.caller != nil {
				ctx = authz.WithPrincipal(ctx, *tt.caller)
			}
			got, err := actors.ResolveActors(ctx, tt.ids)
			if tt.wantCode != "" {
				if domain.CodeOf(err) != tt.wantCode {
					t.Fatalf("err = %v, want code %s", err, tt.wantCode)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}

	t.Run("a store failure is returned, not reported as unresolved", func(t *testing.T) {
		broken := readmodel.NewActors(actorUsers{err: errors.New("db down")}, sas)
		_, err := broken.ResolveActors(authz.WithPrincipal(context.Background(), viewer), []string{"u1"})
		if domain.KindOf(err) != domain.KindInternal {
			t.Fatalf("err = %v, want internal", err)
		}
	})
}

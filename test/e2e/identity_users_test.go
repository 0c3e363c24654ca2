package e2e

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/test/enginetest"
)

func patchUser(t *testing.T, e *enginetest.Engine, key, id string, body any) (*http.Response, []byte) {
	t.Helper()
	return e.Do(t, http.MethodPatch, "/v1/users/"+id, key, body)
}

// TestUserStatusTable walks every row of the user status table.
func TestUserStatusTable(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		// (none) -> invited
		resp, body := e.Do(t, http.MethodPost, "/v1/users", e.AdminKey, map[string]any{"email": "Ann@Example.com", "full_name": "Ann", "role": "member"})
		wantStatus(t, resp, body, http.StatusCreated)
		ub := decode[userBody](t, body)
		if ub.User.Status != "invited" || !ub.Created || ub.User.Email != "ann@example.com" {
			t.Fatalf("invite: %s", body)
		}
		ann := ub.User.ID
		// identical repeat: 200 created=false
		resp, body = e.Do(t, http.MethodPost, "/v1/users", e.AdminKey, map[string]any{"email": "ann@example.com", "full_name": "Ann", "role": "member"})
		wantStatus(t, resp, body, http.StatusOK)
		if ub2 := decode[userBody](t, body); ub2.Created || ub2.User.ID != ann {
			t.Fatalf("repeat: %s", body)
		}
		// other use of the email: 409
		resp, body = e.Do(t, http.MethodPost, "/v1/users", e.AdminKey, map[string]any{"email": "ann@example.com", "full_name": "Ann", "role": "admin"})
		wantProblem(t, resp, body, http.StatusConflict, "email_taken")

		// invited -> active by an admin is refused
		resp, body = patchUser(t, e, e.AdminKey, ann, map[string]any{"status": "active"})
		wantProblem(t, resp, body, http.StatusConflict, "activation_requires_sign_in")
		// invited -> suspended is not a transition
		resp, body = patchUser(t, e, e.AdminKey, ann, map[string]any{"status": "suspended"})
		wantProblem(t, resp, body, http.StatusConflict, "invalid_status_transition")
		// unknown status: 400 naming the field
		resp, body = patchUser(t, e, e.AdminKey, ann, map[string]any{"status": "frozen"})
		if p := wantProblem(t, resp, body, http.StatusBadRequest, "validation_failed"); p.Field != "status" {
			t.Fatalf("field %q", p.Field)
		}
		// invited -> archived
		resp, body = patchUser(t, e, e.AdminKey, ann, map[string]any{"status": "archived"})
		wantStatus(t, resp, body, http.StatusOK)
		if decode[userBody](t, body).User.Status != "archived" {
			t.Fatalf("archive invited: %s", body)
		}
		// archived -> anything: 409
		for _, patch := range []map[string]any{{"status": "active"}, {"status": "suspended"}, {"role": "viewer"}, {"full_name": "X"}} {
			resp, body = patchUser(t, e, e.AdminKey, ann, patch)
			wantProblem(t, resp, body, http.StatusConflict, "invalid_status_transition")
		}

		// active -> suspended -> active -> archived
		bob, _ := e.NewUser(t, domain.RoleMember)
		for _, step := range []string{"suspended", "active", "suspended", "archived"} {
			resp, body = patchUser(t, e, e.AdminKey, bob.ID, map[string]any{"status": step})
			wantStatus(t, resp, body, http.StatusOK)
			if got := decode[userBody](t, body).User.Status; got != step {
				t.Fatalf("status %s, want %s", got, step)
			}
		}
		// active -> archived directly
		cat, _ := e.NewUser(t, domain.RoleViewer)
		resp, body = patchUser(t, e, e.AdminKey, cat.ID, map[string]any{"status": "archived"})
		wantStatus(t, resp, body, http.StatusOK)

		// unknown user
		resp, body = patchUser(t, e, e.AdminKey, "no-such-user", map[string]any{"status": "suspended"})
		wantProblem(t, resp, body, http.StatusNotFound, "not_found")

		// role and name changes
		dan, _ := e.NewUser(t, domain.RoleViewer)
		resp, body = patchUser(t, e, e.AdminKey, dan.ID, map[string]any{"role": "member", "full_name": "Dan"})
		wantStatus(t, resp, body, http.StatusOK)
		if got := decode[userBody](t, body).User.Role; got != "member" {
			t.Fatalf("role %s", got)
		}
		resp, body = patchUser(t, e, e.AdminKey, dan.ID, map[string]any{"role": "owner"})
		if p := wantProblem(t, resp, body, http.StatusBadRequest, "validation_failed"); p.Field != "role" {
			t.Fatalf("field %q", p.Field)
		}
	})
}

func TestUserListAndPermissions(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		_, viewerKey := e.NewUser(t, domain.RoleViewer)
		_, memberKey := e.NewUser(t, domain.RoleMember)

		resp, body := e.Do(t, http.MethodPost, "/v1/users", viewerKey, map[string]any{"email": "x@example.com", "role": "viewer"})
		wantProblem(t, resp, body, http.StatusForbidden, "forbidden")
		resp, body = e.Do(t, http.MethodPatch, "/v1/users/"+e.Admin.ID, memberKey, map[string]any{"status": "suspended"})
		wantProblem(t, resp, body, http.StatusForbidden, "forbidden")

		for _, key := range []string{e.AdminKey, memberKey, viewerKey} {
			resp, body = e.Do(t, http.MethodGet, "/v1/users", key, nil)
			wantStatus(t, resp, body, http.StatusOK)
			list := decode[struct {
				Users     []map[string]any `json:"users"`
				CanManage bool             `json:"can_manage"`
				LoginURL  string           `json:"login_url"`
			}](t, body)
			if len(list.Users) != 3 || list.CanManage != (key == e.AdminKey) || list.LoginURL != e.URL+"/login" {
				t.Fatalf("list: %s", body)
			}
			for _, f := range []string{"id", "email", "full_name", "role", "status", "created_at", "updated_at", "activated_at", "last_login_at"} {
				if _, ok := list.Users[0][f]; !ok {
					t.Fatalf("user JSON lacks %s: %s", f, body)
				}
			}
		}
		// no credential
		resp, body = e.Do(t, http.MethodGet, "/v1/users", "", nil)
		wantProblem(t, resp, body, http.StatusUnauthorized, "unauthenticated")
		// a service account never reads the user list
		resp, body = e.Do(t, http.MethodPost, "/v1/api-keys", e.AdminKey, map[string]any{"name": "ci", "create_service_account": map[string]any{"name": "ci-bot", "role": "member"}})
		wantStatus(t, resp, body, http.StatusCreated)
		saKey := decode[struct{ Key string }](t, body).Key
		resp, body = e.Do(t, http.MethodGet, "/v1/users", saKey, nil)
		wantProblem(t, resp, body, http.StatusForbidden, "forbidden")
	})
}

func TestStrictBodies(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		cases := []struct {
			name, body string
			status     int
			code       string
			field      string
		}{
			{"unknown field", `{"email":"a@example.com","role":"viewer","nickname":"x"}`, 400, "validation_failed", "nickname"},
			{"trailing data", `{"email":"a@example.com","role":"viewer"} {}`, 400, "validation_failed", ""},
			{"bad email", `{"email":"not-an-email","role":"viewer"}`, 400, "validation_failed", "email"},
			{"missing email", `{"role":"viewer"}`, 400, "validation_failed", "email"},
			{"unknown role", `{"email":"a@example.com","role":"root"}`, 400, "validation_failed", "role"},
			{"wrong type", `{"email":1,"role":"viewer"}`, 400, "validation_failed", "email"},
			{"not json", `email=a`, 400, "validation_failed", ""},
			{"too large", `{"email":"a@example.com","full_name":"` + strings.Repeat("x", 1<<20) + `","role":"viewer"}`, 413, "body_too_large", ""},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				resp, body := e.Do(t, http.MethodPost, "/v1/users", e.AdminKey, c.body)
				if p := wantProblem(t, resp, body, c.status, c.code); p.Field != c.field {
					t.Fatalf("field %q, want %q", p.Field, c.field)
				}
			})
		}
		resp, body := e.Do(t, http.MethodGet, "/v1/no-such-route", e.AdminKey, nil)
		wantProblem(t, resp, body, http.StatusNotFound, "not_found")
		resp, body = e.Do(t, http.MethodPut, "/v1/users", e.AdminKey, nil)
		wantProblem(t, resp, body, http.StatusMethodNotAllowed, "method_not_allowed")
	})
}

// TestLastAdminUnderConcurrency has two admins demote and suspend each other
// concurrently: exactly the invariant must hold, never a 500.
func TestLastAdminUnderConcurrency(t *testing.T) {
	t.Parallel()
	forEachDialect(t, func(t *testing.T, e *enginetest.Engine) {
		second, secondKey := e.NewUser(t, domain.RoleAdmin)
		var wg sync.WaitGroup
		type result struct {
			status int
			body   string
		}
		results := make(chan result, 20)
		start := make(chan struct{})
		for i := 0; i < 20; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				// Each admin targets the other or itself, so whichever change
				// commits first makes the later ones break the invariant.
				key := e.AdminKey
				if i%2 == 1 {
					key = secondKey
				}
				target := second.ID
				if (i/2)%2 == 1 {
					target = e.Admin.ID
				}
				patch := map[string]any{"status": "suspended"}
				if i%8 >= 4 {
					patch = map[string]any{"role": "member"}
				}
				<-start
				resp, body := e.Do(t, http.MethodPatch, "/v1/users/"+target, key, patch)
				results <- result{resp.StatusCode, string(body)}
			}(i)
		}
		close(start)
		wg.Wait()
		close(results)
		ok, conflicts, lockedOut := 0, 0, 0
		for r := range results {
			switch {
			case r.status == http.StatusOK:
				ok++
			case r.status == http.StatusConflict && strings.Contains(r.body, "last_active_admin_required"):
				conflicts++
			case r.status == http.StatusUnauthorized || r.status == http.StatusForbidden:
				// the caller was itself demoted or suspended by an earlier request
				lockedOut++
			default:
				t.Errorf("unexpected response %d %s", r.status, r.body)
			}
		}
		t.Logf("200: %d, 409 last_active_admin_required: %d, caller no longer admin: %d", ok, conflicts, lockedOut)
		if ok == 0 {
			t.Fatal("no change succeeded")
		}
		users, err := e.Server.Store.ListUsers(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		admins := 0
		for _, u := range users {
			if u.IsActiveAdmin() {
				admins++
			}
		}
		if admins != 1 {
			t.Fatalf("%d active admins remain, want exactly 1", admins)
		}
		// and the last one cannot leave
		var last string
		var lastKey string
		for _, u := range users {
			if u.IsActiveAdmin() {
				last = u.ID
			}
		}
		lastKey = e.AdminKey
		if last == second.ID {
			lastKey = secondKey
		}
		for _, patch := range []map[string]any{{"status": "suspended"}, {"status": "archived"}, {"role": "viewer"}} {
			resp, body := patchUser(t, e, lastKey, last, patch)
			wantProblem(t, resp, body, http.StatusConflict, "last_active_admin_required")
		}
	})
}

package waits_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/threadengine/engine/app/authz"
	"github.com/threadengine/engine/app/delivery"
	"github.com/threadengine/engine/app/waits"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// validations is a ports.StepValidations that counts its reads.
type validations struct {
	mu       sync.Mutex
	reads    int
	recorded map[string]bool // step ids
}

func (v *validations) StepValidation(_ context.Context, _, stepID string) (*ports.ValidationRecord, bool, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.reads++
	if v.recorded[stepID] {
		return &ports.ValidationRecord{OverallStatus: domain.ValidationPassed}, true, nil
	}
	return nil, false, nil
}

func (v *validations) count() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.reads
}

type threadGetter struct{}

func (threadGetter) GetThread(_ context.Context, id string) (domain.Thread, error) {
	return domain.Thread{ID: id, OwnerID: "u1"}, nil
}

// A pending wait re-reads what it waits for only when its own thread
// changes (here or, through the Hub's broadcast, elsewhere) and at the
// safety interval; commits of other threads cost it nothing.
func TestWaitIsWokenByItsThreadOnly(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := delivery.NewHub(nil, ports.SystemClock{}, nil)
		v := &validations{recorded: map[string]bool{}}
		wait := waits.NewWaitForValidationHandler(threadGetter{}, v, h, ports.SystemClock{})
		ctx := authz.WithPrincipal(context.Background(), domain.Principal{Kind: domain.PrincipalUser, ID: "u1", Role: domain.RoleMember})
		var res waits.WaitResult
		done := make(chan struct{})
		go func() {
			defer close(done)
			var err error
			if res, err = wait.Handle(ctx, "t1", "s1", time.Minute); err != nil {
				t.Error(err)
			}
		}()
		synctest.Wait()
		if v.count() != 1 || h.WaitCounts().Pending != 1 {
			t.Fatalf("reads %d, counts %+v: want the first read only", v.count(), h.WaitCounts())
		}
		for range 100 { // a busy engine: other threads' commits
			h.Published(context.Background(), []ports.NotificationRecord{{ID: "x", ThreadID: "t2"}})
			h.ThreadsChanged("t3")
		}
		synctest.Wait()
		if v.count() != 1 {
			t.Fatalf("other threads' changes made %d reads", v.count()-1)
		}
		time.Sleep(31 * time.Second) // the safety interval
		synctest.Wait()
		if v.count() != 2 {
			t.Fatalf("reads %d after the safety interval, want 2", v.count())
		}
		v.mu.Lock()
		v.recorded["s1"] = true
		v.mu.Unlock()
		h.Published(context.Background(), []ports.NotificationRecord{{ID: "y", ThreadID: "t1"}})
		<-done
		if res.Decision != waits.DecisionPassed || v.count() != 3 {
			t.Fatalf("decision %q after %d reads", res.Decision, v.count())
		}
		if c := h.WaitCounts(); c.Pending != 0 || c.Reads != 3 {
			t.Fatalf("counts %+v", c)
		}
	})
}

// notifications.wait_recheck sets the safety interval: a pending wait
// re-reads at it (and not before), whatever the default.
func TestWaitRecheckIsConfigured(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := delivery.NewHub(nil, ports.SystemClock{}, nil)
		h.Configure(delivery.HubConfig{WaitRecheck: 5 * time.Second})
		v := &validations{recorded: map[string]bool{}}
		wait := waits.NewWaitForValidationHandler(threadGetter{}, v, h, ports.SystemClock{})
		ctx, cancel := context.WithCancel(authz.WithPrincipal(context.Background(), domain.Principal{Kind: domain.PrincipalUser, ID: "u1", Role: domain.RoleMember}))
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = wait.Handle(ctx, "t1", "s1", time.Minute)
		}()
		synctest.Wait()
		time.Sleep(4 * time.Second)
		synctest.Wait()
		if v.count() != 1 {
			t.Fatalf("reads %d before the configured interval, want 1", v.count())
		}
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if v.count() != 2 {
			t.Fatalf("reads %d after the configured interval, want 2", v.count())
		}
		cancel()
		<-done
	})
}

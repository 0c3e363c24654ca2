package readmodel_test

import (
	"context"
	"reflect"
	"sync"
	"testing"

	"github.com/threadengine/engine/app/readmodel"
	"github.com/threadengine/engine/domain"
	"github.com/threadengine/engine/ports"
)

// notPerThread lists the fields of readmodel.Queries that are not read
// handlers of threads, so the walk below skips them. Every other field is
// walked: a new handler is covered without anyone remembering to add it.
var notPerThread = map[string]string{
	"Clock":          "the query clock, not a handler",
	"ThreadsVersion": "one opaque engine-wide value: no thread id in, nothing about a thread out",
	"Contract":       "contracts are not thread data (contracts.read)",
	"ContractDiff":   "contracts are not thread data (contracts.read)",
	"ContractStats":  "app/insights: company-wide aggregates, refused to a party-scoped caller there",
	"StepStats":      "app/insights: company-wide aggregates, refused to a party-scoped caller there",
	"Overview":       "app/insights: company-wide aggregates, refused to a party-scoped caller there",
	"Problems":       "app/insights: company-wide aggregates, refused to a party-scoped caller there",
	"ProcessMap":     "app/insights: company-wide aggregates, refused to a party-scoped caller there",
}

const hiddenThread = "thread-not-a-party"

// readSpy is the read side's store: it answers every read with data about
// the threads asked for and records whether anything about hiddenThread
// was read (or a list read without the party filter, which would include
// it). Only PartyThreads may be asked about it: that is how the scope
// learns that the caller is not a party.
type readSpy struct {
	mu     sync.Mutex
	leaked []string
}

func (s *readSpy) saw(method string, ids ...string) {
	for _, id := range ids {
		if id == hiddenThread {
			s.mu.Lock()
			s.leaked = append(s.leaked, method)
			s.mu.Unlock()
		}
	}
}

func (s *readSpy) sawKeys(method string, keys []ports.StepKey) {
	for _, k := range keys {
		s.saw(method, k.ThreadID)
	}
}

func (s *readSpy) list(method string, f ports.ThreadFilter) []ports.ThreadView {
	if f.Party != nil {
		return nil // the fake principal is a party of nothing listed
	}
	s.saw(method+" without the party filter", hiddenThread)
	return []ports.ThreadView{{ID: hiddenThread}}
}

func (s *readSpy) GetThreads(_ context.Context, ids []string) ([]ports.ThreadView, error) {
	s.saw("GetThreads", ids...)
	out := make([]ports.ThreadView, 0, len(ids))
	for _, id := range ids {
		out = append(out, ports.ThreadView{ID: id})
	}
	return out, nil
}
func (s *readSpy) ListThreads(_ context.Context, f ports.ThreadFilter) ([]ports.ThreadView, error) {
	return s.list("ListThreads", f), nil
}
func (s *readSpy) CountThreads(_ context.Context, f ports.ThreadFilter, _ int) (int, error) {
	return len(s.list("CountThreads", f)), nil
}
func (s *readSpy) Refs(_ context.Context, ids []string) (map[string]map[string]string, error) {
	s.saw("Refs", ids...)
	return nil, nil
}
func (s *readSpy) Counts(_ context.Context, ids []string) (map[string]ports.ThreadCounts, error) {
	s.saw("Counts", ids...)
	return nil, nil
}
func (s *readSpy) LinkedFrom(_ context.Context, ids []string, _ int) (map[string][]string, error) {
	s.saw("LinkedFrom", ids...)
	return nil, nil
}
func (s *readSpy) Chains(_ context.Context, ids []string, _, _ int) (map[string][]ports.ChainLink, error) {
	s.saw("Chains", ids...)
	return nil, nil
}
func (s *readSpy) PartyThreads(_ context.Context, _ ports.PartyOf, _ []string) ([]string, error) {
	return nil, nil // the caller is a party of none of them
}
func (s *readSpy) ThreadsVersion(context.Context) (string, error) { return "v", nil }
func (s *readSpy) Steps(_ context.Context, ids []string, _ ports.StepFilter, _ int) (map[string][]ports.StepView, error) {
	s.saw("Steps", ids...)
	return nil, nil
}
func (s *readSpy) Attempts(_ context.Context, ids []string, _, _ int) (map[string][]ports.ActivityView, error) {
	s.saw("Attempts", ids...)
	return nil, nil
}
func (s *readSpy) Activities(_ context.Context, ids []string) (map[string][]ports.ActivityView, error) {
	s.saw("Activities", ids...)
	return nil, nil
}
func (s *readSpy) StepHistories(_ context.Context, keys []ports.StepKey, _ ports.HistoryFilter) (map[ports.StepKey][]ports.ActivityView, error) {
	s.sawKeys("StepHistories", keys)
	return nil, nil
}
func (s *readSpy) History(_ context.Context, key ports.StepKey, _ ports.HistoryFilter) ([]ports.ActivityView, error) {
	s.sawKeys("History", []ports.StepKey{key})
	return nil, nil
}
func (s *readSpy) SubSteps(_ context.Context, keys []ports.StepKey) (map[ports.StepKey][]ports.SubStepView, error) {
	s.sawKeys("SubSteps", keys)
	return nil, nil
}
func (s *readSpy) StepGroups(_ context.Context, ids []string, _ int) (map[string][]ports.StepGroupView, error) {
	s.saw("StepGroups", ids...)
	return nil, nil
}
func (s *readSpy) StepEdges(_ context.Context, ids []string, _ int) (map[string][]ports.StepEdgeView, error) {
	s.saw("StepEdges", ids...)
	return nil, nil
}
func (s *readSpy) IssueKeys(_ context.Context, refs []ports.IssueRef) (map[string]string, error) {
	for _, r := range refs {
		s.saw("IssueKeys", r.ThreadID)
	}
	return nil, nil
}
func (s *readSpy) Validations(_ context.Context, ids []string, _ ports.ValidationFilter) (map[string][]ports.ValidationView, error) {
	s.saw("Validations", ids...)
	return nil, nil
}
func (s *readSpy) LatestValidations(_ context.Context, keys []ports.StepKey) (map[ports.StepKey]ports.ValidationView, error) {
	s.sawKeys("LatestValidations", keys)
	return nil, nil
}
func (s *readSpy) Notifications(_ context.Context, ids []string, _ ports.NotificationFilter) (map[string][]ports.NotificationView, error) {
	s.saw("Notifications", ids...)
	return nil, nil
}
func (s *readSpy) NotificationCounts(_ context.Context, ids []string) (map[string]ports.NotificationCounts, error) {
	s.saw("NotificationCounts", ids...)
	return nil, nil
}

var _ ports.ThreadQueries = (*readSpy)(nil)

// argFor is an argument of type t that names hiddenThread wherever an
// argument can name a thread: ids, step keys, thread views, and the
// ThreadID of argument structs (their bools set, so that every optional
// part is read).
func argFor(t reflect.Type) reflect.Value {
	v := reflect.New(t).Elem()
	switch {
	case t == reflect.TypeOf(""):
		v.SetString(hiddenThread)
	case t == reflect.TypeOf([]string{}):
		v.Set(reflect.ValueOf([]string{hiddenThread}))
	case t == reflect.TypeOf([]ports.StepKey{}):
		v.Set(reflect.ValueOf([]ports.StepKey{{ThreadID: hiddenThread, StepName: "charge", IdempotencyKey: "k"}}))
	case t == reflect.TypeOf([]ports.ThreadView{}):
		// With an issue: IssueKeys reads only the threads that have one.
		v.Set(reflect.ValueOf([]ports.ThreadView{{ID: hiddenThread,
			Health: domain.ThreadHealth{FirstIssue: &domain.HealthIssue{StepName: "charge", Type: domain.IssueStepFailed}}}}))
	case t.Kind() == reflect.Struct:
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			switch {
			case f.Anonymous || (f.Type.Kind() == reflect.Struct && f.Type.PkgPath() == t.PkgPath()):
				v.Field(i).Set(argFor(f.Type))
			case f.Name == "ThreadID":
				v.Field(i).SetString(hiddenThread)
			case f.Name == "StepName":
				v.Field(i).SetString("charge")
			case f.Type.Kind() == reflect.Bool:
				v.Field(i).SetBool(true)
			}
		}
	}
	return v
}

// TestEveryReadHandlerKeepsAPartyOutOfOtherThreads walks the fields of
// readmodel.Queries by reflection and calls each handler's Handle with
// arguments naming a thread the caller is not a party of. A party-scoped
// service account must not get anything about it read from the store; a
// company-wide caller making the same call does (which shows that the call
// reaches the store, so the first check means something).
func TestEveryReadHandlerKeepsAPartyOutOfOtherThreads(t *testing.T) {
	t.Parallel()
	ctxType := reflect.TypeOf((*context.Context)(nil)).Elem()
	qt := reflect.TypeOf(readmodel.Queries{})
	walked := 0
	for i := 0; i < qt.NumField(); i++ {
		field := qt.Field(i)
		if _, skip := notPerThread[field.Name]; skip {
			continue
		}
		t.Run(field.Name, func(t *testing.T) {
			call := func(who domain.Principal) (leaked []string, err error) {
				spy := &readSpy{}
				q := reflect.ValueOf(readmodel.New(readmodel.Deps{Store: spy, Clock: clock})).Elem()
				handle := q.Field(i).MethodByName("Handle")
				if !handle.IsValid() {
					t.Fatalf("Queries.%s (%s) has no Handle method: list it in notPerThread with the reason, or walk it", field.Name, field.Type)
				}
				ht := handle.Type()
				args := make([]reflect.Value, ht.NumIn())
				for j := range args {
					if ht.In(j) == ctxType {
						args[j] = reflect.ValueOf(as(who))
					} else {
						args[j] = argFor(ht.In(j))
					}
				}
				out := handle.Call(args)
				if last := out[len(out)-1]; !last.IsNil() {
					err = last.Interface().(error)
				}
				return spy.leaked, err
			}
			if leaked, err := call(partySA); len(leaked) > 0 {
				t.Errorf("a party-scoped caller had the store read the thread it is not a party of, through %v (err %v)", leaked, err)
			}
			if reached, err := call(human); len(reached) == 0 {
				t.Errorf("a company-wide caller's call read nothing about the thread (err %v): the walk's arguments do not reach the store, so the check above proves nothing", err)
			}
		})
		walked++
	}
	if walked < 20 {
		t.Fatalf("walked %d handlers: Queries lost its handlers?", walked)
	}
}

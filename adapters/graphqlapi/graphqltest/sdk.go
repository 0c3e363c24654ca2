// Package graphqltest holds what tests, benchmarks and the load program share:
// the exact queries the SDKs send (sdk-wire-protocol §6) and fixture helpers.
package graphqltest

import (
	"fmt"
	"strings"

	"github.com/threadengine/engine/adapters/graphqlapi/sdkdocs"
)

// The SDK documents (package sdkdocs), under their historical names.
const (
	Thread                 = sdkdocs.Thread
	Step                   = sdkdocs.Step
	History                = sdkdocs.History
	SubStep                = sdkdocs.SubStep
	Validation             = sdkdocs.Validation
	GetThread              = sdkdocs.GetThread
	GetThreadByRef         = sdkdocs.GetThreadByRef
	GetThreadsByRefNode    = sdkdocs.GetThreadsByRefNode
	GetThreadsByRefGo      = sdkdocs.GetThreadsByRefGo
	GetThreadChain         = sdkdocs.GetThreadChain
	GetThreadSteps         = sdkdocs.GetThreadSteps
	GetThreadValidations   = sdkdocs.GetThreadValidations
	GetCompleteThread      = sdkdocs.GetCompleteThread
	GetStepSubSteps        = sdkdocs.GetStepSubSteps
	GetStepHistory         = sdkdocs.GetStepHistory
	PyThread               = sdkdocs.PyThread
	PyStep                 = sdkdocs.PyStep
	PyHistory              = sdkdocs.PyHistory
	PySubStep              = sdkdocs.PySubStep
	PyValidation           = sdkdocs.PyValidation
	PyGetThread            = sdkdocs.PyGetThread
	PyGetThreadsByRef      = sdkdocs.PyGetThreadsByRef
	PyGetThreadValidations = sdkdocs.PyGetThreadValidations
	PyGetThreadChain       = sdkdocs.PyGetThreadChain
	PyGetThreadSteps       = sdkdocs.PyGetThreadSteps
	PyGetCompleteThread    = sdkdocs.PyGetCompleteThread
	PyGetStepHistory       = sdkdocs.PyGetStepHistory
	PyGetStepSubSteps      = sdkdocs.PyGetStepSubSteps
)

// SDKCase is one SDK operation with the variables an SDK sends.
type SDKCase struct {
	Name      string
	Query     string
	Variables map[string]any
}

// SDKCases returns every SDK operation for thread id (which has step
// stepName/key and ref refKey=refValue). Node sends null for unset
// variables, Go omits them; both forms are included.
func SDKCases(id, stepName, key, refKey, refValue string) []SDKCase {
	return []SDKCase{
		{"GetThread", GetThread, map[string]any{"id": id}},
		{"GetThreadByRef/node", GetThreadByRef, map[string]any{"refKey": refKey, "refValue": refValue}},
		{"GetThreadByRef/nullKey", GetThreadByRef, map[string]any{"refKey": nil, "refValue": refValue}},
		{"GetThreadsByRef/node", GetThreadsByRefNode, map[string]any{"refKey": refKey, "refValue": refValue,
			"status": nil, "startedAfter": nil, "startedBefore": nil, "limit": 50, "offset": 0}},
		{"GetThreadsByRef/go", GetThreadsByRefGo, map[string]any{"refKey": refKey, "refValue": refValue}},
		{"GetThreadChain", GetThreadChain, map[string]any{"rootId": id, "maxDepth": 3}},
		{"GetThreadChain/nullDepth", GetThreadChain, map[string]any{"rootId": id, "maxDepth": nil}},
		{"GetThreadSteps/node", GetThreadSteps, map[string]any{"threadId": id, "stepName": nil, "idempotencyKey": nil, "status": nil}},
		{"GetThreadSteps/success", GetThreadSteps, map[string]any{"threadId": id, "status": "success"}},
		{"GetThreadSteps/completed", GetThreadSteps, map[string]any{"threadId": id, "status": "completed"}},
		{"GetThreadSteps/nameKey", GetThreadSteps, map[string]any{"threadId": id, "stepName": stepName + ":" + key}},
		{"GetThreadValidations/node", GetThreadValidations, map[string]any{"threadId": id, "options": map[string]any{"limit": 5}}},
		{"GetThreadValidations/go", GetThreadValidations, map[string]any{"threadId": id, "options": map[string]any{"limit": 10}}},
		{"GetCompleteThread/defaults", GetCompleteThread, map[string]any{"id": id, "stepName": nil, "idempotencyKey": nil,
			"status": nil, "stepHistoryLimit": 50, "validationLimit": 10}},
		{"GetCompleteThread/go", GetCompleteThread, map[string]any{"id": id, "stepHistoryLimit": 50, "validationLimit": 10}},
		{"GetStepSubSteps", GetStepSubSteps, map[string]any{"threadId": id, "stepName": stepName, "idempotencyKey": key}},
		{"GetStepSubSteps/nullKey", GetStepSubSteps, map[string]any{"threadId": id, "stepName": stepName, "idempotencyKey": nil}},
		{"GetStepHistory/node", GetStepHistory, map[string]any{"threadId": id, "stepName": stepName, "idempotencyKey": key,
			"limit": 100, "offset": 0, "startAt": nil, "endAt": nil, "activityType": nil, "actor": nil}},
		{"GetStepHistory/go", GetStepHistory, map[string]any{"threadId": id, "stepName": stepName}},
	}
}

// Diamond returns the fragment-diamond attack: n fragments, each spreading
// the next one twice, so the operation expands to 2^n selections of id
// (about 40 bytes per fragment).
func Diamond(n int) string {
	var b strings.Builder
	b.WriteString(`query Diamond($id: ID!) { thread(id: $id) { ...F0 } }`)
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "\nfragment F%d on Thread { ...F%d ...F%d }", i, i+1, i+1)
	}
	fmt.Fprintf(&b, "\nfragment F%d on Thread { id }", n)
	return b.String()
}

// PythonCases returns every Python SDK read with the variables it sends by
// default (it omits unset ones; limits default to 50, 10, 3, 100).
func PythonCases(id, stepName, key, refKey, refValue string) []SDKCase {
	return []SDKCase{
		{"py/get_thread", PyGetThread, map[string]any{"id": id}},
		{"py/get_thread_by_ref", PyGetThreadsByRef, map[string]any{"refKey": refKey, "refValue": refValue, "limit": 1, "offset": 0}},
		{"py/get_threads_by_ref", PyGetThreadsByRef, map[string]any{"refKey": refKey, "refValue": refValue, "limit": 50, "offset": 0}},
		{"py/get_validation_results", PyGetThreadValidations, map[string]any{"threadId": id, "options": map[string]any{"limit": 50}}},
		{"py/get_validation_results/step", PyGetThreadValidations, map[string]any{"threadId": id, "options": map[string]any{"limit": 50, "stepName": stepName}}},
		{"py/validation_results", PyGetThreadValidations, map[string]any{"threadId": id, "options": map[string]any{"limit": 10}}},
		{"py/get_thread_chain", PyGetThreadChain, map[string]any{"rootId": id, "maxDepth": 3}},
		{"py/steps", PyGetThreadSteps, map[string]any{"threadId": id}},
		{"py/get_complete_data", PyGetCompleteThread, map[string]any{"id": id, "stepHistoryLimit": 50, "validationLimit": 10}},
		{"py/history", PyGetStepHistory, map[string]any{"threadId": id, "stepName": stepName, "limit": 100, "idempotencyKey": key}},
		{"py/sub_steps", PyGetStepSubSteps, map[string]any{"threadId": id, "stepName": stepName, "idempotencyKey": key}},
	}
}

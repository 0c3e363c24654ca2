// Package graphqltest holds what tests, benchmarks and the load program share:
// the exact queries the SDKs send (sdk-wire-protocol §6) and fixture helpers.
package graphqltest

import (
	"fmt"
	"strings"
)

// Field selections of the SDKs' DataRetriever.
const (
	Thread     = `id contractId contractName contractVersion ownerId companyId status lastHash startedAt completedAt error refs`
	Step       = `threadId stepName idempotencyKey status retryCount firstSeenAt lastUpdatedAt latestStepID previousStep verified verificationError`
	History    = `attempt timestamp status context duration error`
	SubStep    = `id threadId stepId name status payload recordedAt`
	Validation = `validationId threadId stepId stepName idempotencyKey timestamp validations{type message field expected actual rule} overallStatus hasCriticalViolation criticalCount warningCount minorCount infoCount totalValidations`
)

// SDK queries, verbatim in shape and variable types.
const (
	GetThread = `query GetThread($id: ID!) { thread(id: $id) { ` + Thread + ` } }`

	GetThreadByRef = `query GetThreadByRef($refKey: String, $refValue: String!) { threadsByRef(refKey: $refKey, refValue: $refValue) { threads { ` + Thread + ` } } }`

	GetThreadsByRefNode = `query GetThreadsByRef($refKey: String, $refValue: String!, $status: String, $startedAfter: String, $startedBefore: String, $limit: Int, $offset: Int) {
  threadsByRef(refKey: $refKey, refValue: $refValue, status: $status, startedAfter: $startedAfter, startedBefore: $startedBefore, limit: $limit, offset: $offset) {
    threads { ` + Thread + ` }
  }
}`

	GetThreadsByRefGo = `query GetThreadsByRef($refKey: String!, $refValue: String!, $status: String, $startedAfter: String, $startedBefore: String, $limit: Int, $offset: Int) {
  threadsByRef(refKey: $refKey, refValue: $refValue, status: $status, startedAfter: $startedAfter, startedBefore: $startedBefore, limit: $limit, offset: $offset) {
    threads { ` + Thread + ` }
    totalCount
  }
}`

	GetThreadChain = `query GetThreadChain($rootId: ID!, $maxDepth: Int) { threadChain(rootId: $rootId, maxDepth: $maxDepth) { ` + Thread + ` } }`

	GetThreadSteps = `query GetThreadSteps($threadId: ID!, $stepName: String, $idempotencyKey: String, $status: String) {
  thread(id: $threadId) {
    steps(stepName: $stepName, idempotencyKey: $idempotencyKey, status: $status) {
      ` + Step + `
      history(limit: 1) { ` + History + ` }
    }
  }
}`

	GetThreadValidations = `query GetThreadValidations($threadId: ID!, $options: ValidationQueryOptions) {
  thread(id: $threadId) { validationResults(options: $options) { ` + Validation + ` } }
}`

	GetCompleteThread = `query GetCompleteThread($id: ID!, $stepName: String, $idempotencyKey: String, $status: String, $stepHistoryLimit: Int, $validationLimit: Int) {
  thread(id: $id) {
    ` + Thread + `
    steps(stepName: $stepName, idempotencyKey: $idempotencyKey, status: $status) {
      ` + Step + `
      history(limit: $stepHistoryLimit) { ` + History + ` }
    }
    validationResults(options: { limit: $validationLimit }) { ` + Validation + ` }
  }
}`

	GetStepSubSteps = `query GetStepSubSteps($threadId: String!, $stepName: String!, $idempotencyKey: String) {
  thread(id: $threadId) { steps(stepName: $stepName, idempotencyKey: $idempotencyKey) { subSteps { ` + SubStep + ` } } }
}`

	GetStepHistory = `query GetStepHistory($threadId: String!, $stepName: String!, $idempotencyKey: String, $limit: Int, $offset: Int, $startAt: String, $endAt: String, $activityType: String, $actor: String) {
  stepHistory(threadId: $threadId, stepName: $stepName, idempotencyKey: $idempotencyKey, limit: $limit, offset: $offset, startAt: $startAt, endAt: $endAt, activityType: $activityType, actor: $actor) { ` + History + ` }
}`
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

// Queries of the Python SDK (threadify-sdk 0.4.0, threadify/data_retriever.py),
// whose field sets differ from the Node and Go ones: its validation results
// select no minorCount and no totalValidations.
const (
	PyThread = `
    id
    contractId
    contractName
    contractVersion
    ownerId
    companyId
    status
    lastHash
    startedAt
    completedAt
    error
    refs
`
	PyStep = `
    threadId
    stepName
    idempotencyKey
    status
    retryCount
    firstSeenAt
    lastUpdatedAt
    latestStepID
    previousStep
    verified
    verificationError
`
	PyHistory = `
    attempt
    timestamp
    status
    context
    duration
    error
`
	PySubStep = `
    id
    threadId
    stepId
    name
    status
    payload
    recordedAt
`
	PyValidation = `
    validationId
    threadId
    stepId
    stepName
    idempotencyKey
    timestamp
    validations {
        type
        message
        field
        expected
        actual
        rule
    }
    overallStatus
    hasCriticalViolation
    criticalCount
    warningCount
    infoCount
`

	PyGetThread = `
            query GetThread($id: ID!) {
                thread(id: $id) {
                    ` + PyThread + `
                }
            }
        `
	PyGetThreadsByRef = `
            query GetThreadsByRef(
                $refKey: String!
                $refValue: String!
                $status: String
                $startedAfter: String
                $startedBefore: String
                $limit: Int
                $offset: Int
            ) {
                threadsByRef(
                    refKey: $refKey
                    refValue: $refValue
                    status: $status
                    startedAfter: $startedAfter
                    startedBefore: $startedBefore
                    limit: $limit
                    offset: $offset
                ) {
                    threads {
                        ` + PyThread + `
                    }
                    totalCount
                }
            }
        `
	// PyGetThreadValidations serves both Connection.get_validation_results
	// (options {limit: 50[, stepName]}) and ArchivedThread.validation_results
	// (options {limit: 10}).
	PyGetThreadValidations = `
            query GetThreadValidations($threadId: ID!, $options: ValidationQueryOptions) {
                thread(id: $threadId) {
                    validationResults(options: $options) {
                        ` + PyValidation + `
                    }
                }
            }
        `
	PyGetThreadChain = `
            query GetThreadChain($rootId: ID!, $maxDepth: Int) {
                threadChain(rootId: $rootId, maxDepth: $maxDepth) {
                    ` + PyThread + `
                }
            }
        `
	PyGetThreadSteps = `
            query GetThreadSteps(
                $threadId: ID!
                $stepName: String
                $idempotencyKey: String
                $status: String
            ) {
                thread(id: $threadId) {
                    steps(stepName: $stepName, idempotencyKey: $idempotencyKey, status: $status) {
                        ` + PyStep + `
                        history(limit: 1) {
                            ` + PyHistory + `
                        }
                    }
                }
            }
        `
	PyGetCompleteThread = `
            query GetCompleteThread(
                $id: ID!
                $stepName: String
                $idempotencyKey: String
                $status: String
                $stepHistoryLimit: Int
                $validationLimit: Int
            ) {
                thread(id: $id) {
                    ` + PyThread + `
                    steps(stepName: $stepName, idempotencyKey: $idempotencyKey, status: $status) {
                        ` + PyStep + `
                        history(limit: $stepHistoryLimit) {
                            ` + PyHistory + `
                        }
                    }
                    validationResults(options: {limit: $validationLimit}) {
                        ` + PyValidation + `
                    }
                }
            }
        `
	PyGetStepHistory = `
            query GetStepHistory(
                $threadId: String!
                $stepName: String!
                $idempotencyKey: String
                $limit: Int
                $offset: Int
                $startAt: String
                $endAt: String
                $activityType: String
                $actor: String
            ) {
                stepHistory(
                    threadId: $threadId
                    stepName: $stepName
                    idempotencyKey: $idempotencyKey
                    limit: $limit
                    offset: $offset
                    startAt: $startAt
                    endAt: $endAt
                    activityType: $activityType
                    actor: $actor
                ) {
                    ` + PyHistory + `
                }
            }
        `
	PyGetStepSubSteps = `
            query GetStepSubSteps(
                $threadId: String!
                $stepName: String!
                $idempotencyKey: String
            ) {
                thread(id: $threadId) {
                    steps(stepName: $stepName, idempotencyKey: $idempotencyKey) {
                        subSteps {
                            ` + PySubStep + `
                        }
                    }
                }
            }
        `
)

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

// Package sdkdocs holds the GraphQL documents the published Threadify SDKs
// send (Node 0.1.24 and Go: sdk-wire-protocol §6; Python 0.4.0:
// threadify/data_retriever.py), verbatim in shape and variable types. The
// query handler recognises them (priced by the rows they return,
// docs/integrators/graphql.md); tests, benchmarks and the load program run
// them.
package sdkdocs

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

package loadgen

import "github.com/threadengine/engine/adapters/graphqlapi/graphqltest"

// The GraphQL read scenarios: the SDK's thread fields plus its step states,
// and a page of 50 threads.
const (
	ThreadQuery  = `query($id: ID!) { thread(id: $id) { ` + graphqltest.Thread + ` steps { stepName idempotencyKey status retryCount firstSeenAt lastUpdatedAt latestStepID } } }`
	ThreadsQuery = `query { threads(limit: 50) { totalCount threads { id status contractName startedAt completedAt } } }`
)

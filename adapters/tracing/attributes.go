package tracing

import "go.opentelemetry.io/otel/attribute"

// The engine's span attributes (besides OpenTelemetry's semantic
// conventions for HTTP and databases).
const (
	AttrErrorCode      = attribute.Key("threadengine.error.code")
	AttrThreadID       = attribute.Key("threadengine.thread.id")
	AttrStepName       = attribute.Key("threadengine.step.name")
	AttrStepID         = attribute.Key("threadengine.step.id")
	AttrAction         = attribute.Key("threadengine.ws.action")
	AttrNotificationID = attribute.Key("threadengine.notification.id")
	AttrNotification   = attribute.Key("threadengine.notification.type")
	AttrDeliveries     = attribute.Key("threadengine.notification.deliveries")
	AttrOperation      = attribute.Key("graphql.operation.name")
	AttrGraphQLCost    = attribute.Key("threadengine.graphql.cost")
	AttrTool           = attribute.Key("threadengine.mcp.tool")
	AttrWebhookID      = attribute.Key("threadengine.webhook.id")
	AttrDeliveryID     = attribute.Key("threadengine.webhook.delivery.id")
	AttrAttempt        = attribute.Key("threadengine.webhook.attempt")
	AttrBatchSize      = attribute.Key("threadengine.commit.batch_size")
)

export { connect, Connection, MAX_FRAME_BYTES } from './connection.js';
export { Thread, Step } from './thread.js';
export { Notification, EVENTS, PUSH_EVENTS } from './notification.js';
export { ThreadView, StepView } from './reader.js';
export {
  ThreadengineError, ErrorCode, WaitError, PermissionDeniedError, ValidationViolatedError, ValidationUnavailableError,
  WaitTimeoutError, WaitCancelledError, WaitUnsupportedError, InvalidWaitResponseError,
} from './errors.js';
export { PermissionGrant, Decision, MAX_WAIT_MS } from './waits.js';
export { ThreadengineSpanExporter, ExportResultCode } from './otel.js';
export { deriveEndpoints } from './endpoints.js';
export { idempotencyKey } from './idempotency.js';

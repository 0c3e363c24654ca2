export { connect, Connection, MAX_FRAME_BYTES } from './connection.js';
export { Thread, Step } from './thread.js';
export { Notification, EVENTS } from './notification.js';
export { ThreadView, StepView } from './reader.js';
export { ThreadengineError, ErrorCode } from './errors.js';
export { deriveEndpoints } from './endpoints.js';
export { idempotencyKey } from './idempotency.js';

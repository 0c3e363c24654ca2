/**
 * Every error the SDK raises is a ThreadengineError with a stable `code`:
 * either one of the SDK's own codes below, or the engine's code as it sent it
 * (WebSocket reply `code`, GraphQL `extensions.code`, problem+json `code`),
 * so callers branch on `err.code`, never on message text.
 */
export class ThreadengineError extends Error {
  /**
   * @param {string} code
   * @param {string} message
   * @param {Record<string, unknown>} [extra] merged onto the error (e.g. complexity, limit, status)
   */
  constructor(code, message, extra = {}) {
    super(message, extra.cause ? { cause: extra.cause } : undefined);
    this.name = 'ThreadengineError';
    this.code = code;
    for (const [k, v] of Object.entries(extra)) {
      if (k !== 'cause' && v !== undefined) this[k] = v;
    }
  }
}

/** The SDK's own error codes. Engine codes (e.g. `thread_closed`) pass through unchanged. */
export const ErrorCode = Object.freeze({
  INVALID_ARGUMENT: 'invalid_argument',
  INVALID_API_KEY: 'invalid_api_key',
  FORBIDDEN: 'forbidden',
  ENGINE_UNREACHABLE: 'engine_unreachable',
  ENGINE_UNAVAILABLE: 'engine_unavailable',
  ENGINE_ERROR: 'engine_error',
  CONNECTION_LOST: 'connection_lost',
  CONNECTION_CLOSED: 'connection_closed',
  TIMEOUT: 'timeout',
  NOT_FOUND: 'not_found',
  GRAPHQL_ERROR: 'graphql_error',
  COMPLEXITY_LIMIT_EXCEEDED: 'COMPLEXITY_LIMIT_EXCEEDED',
  // Outcomes of waits (thread.waitFor, thread.waitForValidation, step.success(…, { waitFor: true })).
  PERMISSION_DENIED: 'permission_denied',
  VALIDATION_VIOLATED: 'validation_violated',
  VALIDATION_UNAVAILABLE: 'validation_unavailable',
  WAIT_TIMED_OUT: 'wait_timed_out',
  WAIT_CANCELLED: 'wait_cancelled',
  WAIT_UNSUPPORTED: 'wait_unsupported',
  INVALID_WAIT_RESPONSE: 'invalid_wait_response',
  // OpenTelemetry export: the engine refused some spans of a batch.
  SPANS_REJECTED: 'spans_rejected',
});

export function invalidArgument(message) {
  return new ThreadengineError(ErrorCode.INVALID_ARGUMENT, message);
}

/**
 * A wait ended without the outcome asked for: permission denied, a
 * violated or unavailable validation, a timeout, a cancellation, or an
 * engine that cannot wait. `decision` is the engine's word for it
 * (`denied`, `violated`, `unvalidated`, `timed_out`, `cancelled`,
 * `pending`, …); `result` the whole answer when there was one.
 */
export class WaitError extends ThreadengineError {
  constructor(code, message, extra = {}) {
    super(code, message, extra);
    this.name = 'WaitError';
  }
}

/** A WaitError subclass with its own name and code. */
function waitError(name, code) {
  const C = class extends WaitError {
    constructor(message, extra) {
      super(code, message, extra);
      this.name = name;
    }
  };
  Object.defineProperty(C, 'name', { value: name });
  return C;
}

/** decision `denied` (or any decision but `allowed` to a permission wait). */
export const PermissionDeniedError = waitError('PermissionDeniedError', ErrorCode.PERMISSION_DENIED);
/** decision `violated`: the recorded step broke its contract (`violations` say how). */
export const ValidationViolatedError = waitError('ValidationViolatedError', ErrorCode.VALIDATION_VIOLATED);
/** decision `unvalidated` (a free-form thread has no contract to judge by), or another the SDK does not know. */
export const ValidationUnavailableError = waitError('ValidationUnavailableError', ErrorCode.VALIDATION_UNAVAILABLE);
/** decision `timed_out`, or no answer within the wait's timeout (the SDK then sent cancelWait). */
export const WaitTimeoutError = waitError('WaitTimeoutError', ErrorCode.WAIT_TIMED_OUT);
/** decision `cancelled`, or the caller's AbortSignal fired (the SDK then sent cancelWait). */
export const WaitCancelledError = waitError('WaitCancelledError', ErrorCode.WAIT_CANCELLED);
/** decision `pending` or none: the engine answered without deciding (it cannot wait synchronously). */
export const WaitUnsupportedError = waitError('WaitUnsupportedError', ErrorCode.WAIT_UNSUPPORTED);
/** The answer names another invocation or step than the one asked about. */
export const InvalidWaitResponseError = waitError('InvalidWaitResponseError', ErrorCode.INVALID_WAIT_RESPONSE);

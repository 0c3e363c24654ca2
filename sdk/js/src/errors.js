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
});

export function invalidArgument(message) {
  return new ThreadengineError(ErrorCode.INVALID_ARGUMENT, message);
}

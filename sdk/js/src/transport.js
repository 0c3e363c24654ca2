import { ThreadengineError, ErrorCode } from './errors.js';

/**
 * Picks the WebSocket implementation: an explicit one, else the platform's
 * (browsers, Node.js 22+, Deno, Bun), else the `ws` package (Node.js 18–21).
 * `ws` is this package's one dependency; browser bundles map it away.
 */
export async function resolveWebSocket(explicit) {
  if (explicit !== undefined) {
    if (typeof explicit !== 'function') {
      throw new ThreadengineError(ErrorCode.INVALID_ARGUMENT, 'WebSocket must be a WebSocket constructor');
    }
    return explicit;
  }
  if (typeof globalThis.WebSocket === 'function') return globalThis.WebSocket;
  try {
    const m = await import('ws');
    return m.WebSocket ?? m.default;
  } catch (cause) {
    throw new ThreadengineError(ErrorCode.INVALID_ARGUMENT,
      'no WebSocket implementation: use Node.js 22 or later, install the "ws" package, or pass connect({ WebSocket })',
      { cause });
  }
}

const utf8 = new TextDecoder();

/**
 * Text of a message event's data, whichever implementation produced it.
 * Synchronous on purpose: replies must be handled in arrival order. (Sockets
 * are opened with binaryType "arraybuffer", so no Blob arrives.)
 */
export function frameText(data) {
  if (typeof data === 'string') return data;
  if (data instanceof ArrayBuffer || ArrayBuffer.isView(data)) return utf8.decode(data);
  return String(data);
}

/** A random UUID on every supported platform (Node 18 has no global crypto.randomUUID). */
export function randomId() {
  if (typeof globalThis.crypto?.randomUUID === 'function') return globalThis.crypto.randomUUID();
  const b = new Uint8Array(16);
  if (typeof globalThis.crypto?.getRandomValues === 'function') {
    globalThis.crypto.getRandomValues(b);
  } else {
    for (let i = 0; i < 16; i++) b[i] = Math.floor(Math.random() * 256);
  }
  b[6] = (b[6] & 0x0f) | 0x40;
  b[8] = (b[8] & 0x3f) | 0x80;
  const h = [...b].map((x) => x.toString(16).padStart(2, '0')).join('');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

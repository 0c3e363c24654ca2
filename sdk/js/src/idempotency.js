/**
 * Automatic idempotency keys: FNV-1a 32-bit over the UTF-8 bytes of
 * stepName + the step context as JSON with keys in code-point order, written
 * exactly as Go's encoding/json writes it. The same step with the same
 * context therefore gets the same key from this SDK and from the Go SDK, for
 * any text. (The Threadify Node SDK 0.1.x hashed UTF-16 code units and sorted
 * keys by UTF-16 order, so its keys differ from Go's for non-ASCII context.)
 */

const utf8 = new TextEncoder();

/** @param {string} s @returns {string} s as a JSON string literal, escaped as Go's json.Marshal does */
export function goJSONString(s) {
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) {
        out += s[i] + s[i + 1];
        i++;
        continue;
      }
    }
    switch (c) {
      case 0x22: out += '\\"'; continue;
      case 0x5c: out += '\\\\'; continue;
      case 0x0a: out += '\\n'; continue;
      case 0x0d: out += '\\r'; continue;
      case 0x09: out += '\\t'; continue;
      case 0x08: out += '\\b'; continue;
      case 0x0c: out += '\\f'; continue;
      // Go escapes these for safe embedding in HTML and JavaScript.
      case 0x3c: out += '\\u003c'; continue;
      case 0x3e: out += '\\u003e'; continue;
      case 0x26: out += '\\u0026'; continue;
      case 0x2028: out += '\\u2028'; continue;
      case 0x2029: out += '\\u2029'; continue;
    }
    if (c >= 0xd800 && c <= 0xdfff) {
      // A lone surrogate is not encodable text; Go writes invalid UTF-8 as this escape.
      out += '\\ufffd';
    } else if (c < 0x20) {
      out += '\\u00' + c.toString(16).padStart(2, '0');
    } else {
      out += s[i];
    }
  }
  return out + '"';
}

/** Compares by Unicode code point, which is UTF-8 byte order (Go's sort.Strings). */
function byCodePoint(a, b) {
  const x = utf8.encode(a);
  const y = utf8.encode(b);
  const n = Math.min(x.length, y.length);
  for (let i = 0; i < n; i++) {
    if (x[i] !== y[i]) return x[i] - y[i];
  }
  return x.length - y.length;
}

/** @param {Uint8Array} bytes @returns {string} 8 lower-case hex digits */
export function fnv1a32(bytes) {
  let h = 0x811c9dc5;
  for (const b of bytes) {
    h ^= b;
    h = Math.imul(h, 0x01000193);
  }
  return (h >>> 0).toString(16).padStart(8, '0');
}

/**
 * @param {string} stepName
 * @param {Record<string, string>} context string values (the SDK stringifies context)
 * @returns {string}
 */
export function idempotencyKey(stepName, context) {
  const keys = Object.keys(context).sort(byCodePoint);
  const body = keys.map((k) => goJSONString(k) + ':' + goJSONString(String(context[k]))).join(',');
  return fnv1a32(utf8.encode(stepName + '{' + body + '}'));
}

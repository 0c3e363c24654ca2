import { invalidArgument } from './errors.js';

/**
 * Refs and context travel as string maps: numbers and booleans become what
 * String() gives, Dates ISO-8601, objects JSON; undefined values are left out.
 */
export function stringMap(obj, what) {
  if (obj === null || typeof obj !== 'object' || Array.isArray(obj)) throw invalidArgument(`${what} must be an object`);
  const out = {};
  for (const [k, v] of Object.entries(obj)) {
    if (v === undefined) continue;
    out[k] = typeof v === 'string' ? v : v instanceof Date ? v.toISOString() : typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v);
  }
  return out;
}

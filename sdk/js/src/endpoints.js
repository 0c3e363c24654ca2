import { invalidArgument } from './errors.js';

/**
 * Derives the WebSocket and GraphQL endpoints from the one address users
 * configure. A reverse-proxy path prefix is kept (`https://host/prefix` →
 * `wss://host/prefix/threads`); a trailing `/threads` or `/graphql` (an
 * endpoint pasted instead of the engine address) is dropped so it is not
 * doubled.
 *
 * @param {string} engineUrl http(s)://host[:port][/prefix], or ws(s)://…
 * @returns {{ engineUrl: string, wsUrl: string, graphqlUrl: string }}
 */
export function deriveEndpoints(engineUrl) {
  if (typeof engineUrl !== 'string' || engineUrl.trim() === '') {
    throw invalidArgument('engineUrl is required, e.g. "http://localhost:8081" or "https://example.com/threadengine"');
  }
  let u;
  try {
    u = new URL(engineUrl.trim());
  } catch {
    throw invalidArgument(`engineUrl ${JSON.stringify(engineUrl)} is not an absolute URL (expected e.g. "http://localhost:8081")`);
  }
  const secure = { 'https:': true, 'wss:': true, 'http:': false, 'ws:': false }[u.protocol];
  if (secure === undefined) {
    throw invalidArgument(`engineUrl must use http, https, ws or wss, not ${u.protocol.replace(/:$/, '')}`);
  }
  if (u.username || u.password) {
    throw invalidArgument('engineUrl must not contain credentials; pass the API key as apiKey');
  }
  const prefix = u.pathname.replace(/\/+$/, '').replace(/\/(threads|graphql)$/, '');
  const http = `${secure ? 'https' : 'http'}://${u.host}${prefix}`;
  return {
    engineUrl: http,
    wsUrl: `${secure ? 'wss' : 'ws'}://${u.host}${prefix}/threads`,
    graphqlUrl: `${http}/graphql`,
  };
}

// API access. Every call goes to apiBase: the effective engine URL when it is
// on this page's origin (so a reverse-proxy path prefix is kept), otherwise
// the page's own base. A different origin is never used for calls, because the
// HttpOnly session cookie belongs to this origin and credentials must not be
// sent to another host just because the advertised address changed.

export class ApiError extends Error {
  constructor(status, problem) {
    super((problem && (problem.detail || problem.message || problem.title)) || ('HTTP ' + status));
    this.status = status;
    this.code = problem && problem.code;
    this.field = problem && problem.field;
    this.problem = problem;
    this.retryAfter = problem && problem.retryAfter; // seconds, when a retry may succeed
  }
}

// pageBase is where the UI itself is served ("/" or "/prefix/"), from <base href>.
export const pageBase = new URL(document.baseURI).pathname.replace(/\/?$/, '/');

let apiBase = new URL(pageBase, location.origin).href.replace(/\/$/, '');

export function getApiBase() { return apiBase; }

// pageApiBase is this page's own origin and base path, without a trailing slash.
export function pageApiBase() { return new URL(pageBase, location.origin).href.replace(/\/$/, ''); }

// engineApiBase returns the API base the effective engine URL implies, or
// null when it is on another origin (or does not parse).
export function engineApiBase(engineUrl) {
  if (!engineUrl) return pageApiBase();
  let u;
  try { u = new URL(engineUrl); } catch (_) { return null; }
  if (u.origin !== location.origin) return null;
  return (u.origin + u.pathname).replace(/\/$/, '');
}

export function setApiBase(base) { apiBase = base; }

export async function request(method, path, body, { base } = {}) {
  const headers = { Accept: 'application/json, application/problem+json' };
  const init = { method, headers, credentials: 'same-origin', cache: 'no-store' };
  if (body !== undefined) {
    headers['Content-Type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch((base || apiBase) + path, init);
  } catch (e) {
    throw new ApiError(0, { detail: 'The engine is not reachable (' + e.message + ').', code: 'network_error' });
  }
  const text = await res.text();
  let data = null;
  if (text) { try { data = JSON.parse(text); } catch (_) { data = { detail: text.slice(0, 300) }; } }
  if (!res.ok) {
    if (res.status === 401 && !path.startsWith('/auth/')) onUnauthenticated();
    // GraphQL answers errors as {errors: [{message, extensions: {code}}]}.
    if (data && Array.isArray(data.errors) && data.errors.length) {
      const e = data.errors[0];
      throw new ApiError(res.status, { detail: e.message, code: e.extensions && e.extensions.code, retryAfter: e.extensions && e.extensions.retryAfter });
    }
    throw new ApiError(res.status, data);
  }
  return data;
}

export const api = {
  get: (p, o) => request('GET', p, undefined, o),
  post: (p, b, o) => request('POST', p, b === undefined ? {} : b, o),
  put: (p, b, o) => request('PUT', p, b, o),
  patch: (p, b, o) => request('PATCH', p, b, o),
  del: (p, o) => request('DELETE', p, undefined, o),
};

// changedSince polls a versioned resource (GET with If-None-Match): it
// resolves to {changed: false} on 304, else {changed: true, etag}. Errors
// are thrown like request's.
export async function changedSince(path, etag) {
  const headers = { Accept: 'application/json, application/problem+json' };
  if (etag) headers['If-None-Match'] = etag;
  let res;
  try {
    res = await fetch(apiBase + path, { method: 'GET', headers, credentials: 'same-origin', cache: 'no-store' });
  } catch (e) {
    throw new ApiError(0, { detail: 'The engine is not reachable (' + e.message + ').', code: 'network_error' });
  }
  if (res.status === 304) return { changed: false, etag };
  if (!res.ok) {
    if (res.status === 401) onUnauthenticated();
    let data = null;
    try { data = await res.json(); } catch (_) { /* not JSON */ }
    throw new ApiError(res.status, data);
  }
  return { changed: true, etag: res.headers.get('ETag') || '' };
}

// A read refused by the engine's per-user read budget (limit_exceeded with
// retryAfter) ran nothing: gql waits the time the engine names and asks
// again, a few times, as a page opening several panels at once can briefly
// outrun the budget. Other errors are thrown at once.
const budgetRetries = 3;
const maxRetryWait = 10;

export async function gql(query, variables) {
  let data;
  for (let attempt = 0; ; attempt++) {
    let x;
    try {
      data = await request('POST', '/graphql', { query, variables: variables || {} });
      x = data && data.errors && data.errors.length && data.errors[0].extensions;
    } catch (e) {
      if (!(e instanceof ApiError) || e.code !== 'limit_exceeded' || !(e.retryAfter > 0) || attempt >= budgetRetries) throw e;
      x = { code: e.code, retryAfter: e.retryAfter };
    }
    if (!x || x.code !== 'limit_exceeded' || !(x.retryAfter > 0) || attempt >= budgetRetries) break;
    await new Promise((r) => setTimeout(r, Math.min(x.retryAfter, maxRetryWait) * 1000));
  }
  if (data && data.errors && data.errors.length) {
    const e = data.errors[0];
    const err = new ApiError(200, { detail: e.message, code: e.extensions && e.extensions.code });
    err.partial = data.data;
    throw err;
  }
  return data ? data.data : null;
}

export function loginUrl() {
  const next = location.pathname + location.search;
  return pageBase + 'login?next=' + encodeURIComponent(next);
}

let redirecting = false;
export function onUnauthenticated() {
  if (redirecting) return;
  redirecting = true;
  location.assign(loginUrl());
}

// Friendly text for the stable error codes the REST API returns.
const messages = {
  last_active_admin_required: 'At least one active administrator must remain. Make another active user an admin first, then try again.',
  activation_requires_sign_in: 'An invited user becomes active by signing in with the shared sign-in link; an administrator cannot activate them.',
  email_taken: 'A user with this email already exists.',
  user_state_conflict: 'This change is not allowed in the user\'s current state.',
  invalid_status_transition: 'This status change is not allowed from the user\'s current status.',
  origin_denied: 'The request was refused because its Origin does not match registry.browser_origin.',
  forbidden: 'Your role does not allow this.',
};

export function explain(err) {
  if (!(err instanceof ApiError)) return String(err && err.message || err);
  const friendly = err.code && messages[err.code];
  if (friendly && err.code !== 'forbidden') return friendly;
  return err.message || friendly || 'Request failed';
}

// The console's one way to talk to ndd-gui-api: same-origin fetch with the session cookie
// (HttpOnly: scripts never see it) and the session's CSRF token on writes. The token the
// user logged in with is sent once, in the login body, and never kept.
export type Role = 'admin' | 'viewer';
export interface Session { name: string; role: Role; csrf: string; }
export interface ApiError { error: string; field?: string; reason?: string; }
export interface Reply<T = any> { status: number; etag: string | null; data: T; }

let csrf = '';

export async function request<T = any>(method: string, path: string, body?: unknown,
                                       ifMatch?: string | null): Promise<Reply<T>> {
  const headers: Record<string, string> = { Accept: 'application/json' };
  if (method !== 'GET') headers['X-CSRF-Token'] = csrf;
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  if (ifMatch) headers['If-Match'] = ifMatch;
  const r = await fetch(path, {
    method, headers, credentials: 'same-origin',
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  let data: any = null;
  try { data = text ? JSON.parse(text) : null; } catch { data = { error: 'bad reply', reason: text }; }
  return { status: r.status, etag: r.headers.get('ETag'), data };
}

export async function session(): Promise<Session | null> {
  const r = await request<Session>('GET', '/console/session');
  if (r.status !== 200) return null;
  csrf = r.data.csrf;
  return r.data;
}

export async function login(token: string): Promise<Session | ApiError> {
  const r = await request('POST', '/console/login', { token });
  if (r.status !== 200) return errorOf(r);
  csrf = r.data.csrf;
  return r.data as Session;
}

export async function logout(): Promise<void> {
  await request('POST', '/console/logout');
  csrf = '';
}

/** The admin's error body ({error, field, reason}) or httpd's ({error: {status, message}}). */
export function errorOf(r: Reply): ApiError {
  const d = r.data;
  if (d && typeof d.error === 'string') return d as ApiError;
  if (d && d.error && typeof d.error === 'object')
    return { error: `HTTP ${r.status}`, reason: d.error.message };
  return { error: `HTTP ${r.status}`, reason: '' };
}

export function describe(e: ApiError): string {
  return e.reason ? `${e.error}: ${e.reason}` : e.error;
}

// Feeds: the list with state and rate, and the form with every field of the feed schema
// (docs/api.md "Feed", docs/adapter.md). Blank optional fields are left out (the adapter's
// defaults apply). The admin's 4xx names the field at fault; the form shows it next to
// that field. Edits send If-Match with the version read; a 412 says someone else changed it.
import { useEffect, useState } from 'preact/hooks';
import { describe, errorOf, request } from './api';
import { Check, Field, Page, Select, Status, placeError } from './ui';

const DELIVERY: [string, string][] = [
  ['max_in_flight', '1–10000'], ['timeout_ms', '1–3600000'], ['retry_max_ms', '0–604800000'],
  ['retry_initial_ms', '1–600000'], ['retry_backoff_max_ms', '1–3600000'], ['batch_max', '1–10000'],
  ['batch_ms', '0–60000'], ['max_pending', '1–1000000, at least batch_max'],
  ['max_request_bytes', '1024–268435456'], ['backoff_initial_ms', '1–600000'],
  ['backoff_max_ms', '1–3600000'], ['fail_threshold', '1–1000'], ['memory_mb', '0–65536'],
];
const TLS = ['ca_file', 'cert_file', 'key_file', 'key_password_file', 'sni'];

interface Form {
  name: string; source_topic: string; dlq_topic: string; transport: string; encoding: string;
  endpoints: { url: string; weight: string }[]; filter: string;
  delivery: Record<string, string>; fire_and_forget: boolean;
  tls: Record<string, string>; tls_verify: string;
  http_path: string; http_method: string; http_headers: string; http_header_files: string;
}

function empty(): Form {
  return { name: '', source_topic: '', dlq_topic: '', transport: 'http2', encoding: 'json',
    endpoints: [{ url: '', weight: '1' }], filter: '', delivery: {}, fire_and_forget: false,
    tls: {}, tls_verify: '', http_path: '', http_method: '', http_headers: '', http_header_files: '' };
}

function lines(m: Record<string, string> | undefined): string {
  return Object.entries(m || {}).map(([k, v]) => `${k}: ${v}`).join('\n');
}
function unlines(s: string): Record<string, string> | undefined {
  const out: Record<string, string> = {};
  for (const l of s.split('\n')) {
    const i = l.indexOf(':');
    if (l.trim() && i > 0) out[l.slice(0, i).trim()] = l.slice(i + 1).trim();
  }
  return Object.keys(out).length ? out : undefined;
}

function fromFeed(f: any): Form {
  const d: Record<string, string> = {};
  for (const [k] of DELIVERY) if (f.delivery?.[k] !== undefined) d[k] = String(f.delivery[k]);
  const t: Record<string, string> = {};
  for (const k of TLS) if (f.tls?.[k] !== undefined) t[k] = String(f.tls[k]);
  return { name: f.name, source_topic: f.source_topic ?? '', dlq_topic: f.dlq_topic ?? '',
    transport: f.transport ?? 'http2', encoding: f.encoding ?? 'json',
    endpoints: (f.endpoints ?? []).map((e: any) => ({ url: e.url, weight: String(e.weight ?? 1) })),
    filter: typeof f.filter === 'string' ? f.filter : '', delivery: d,
    fire_and_forget: !!f.delivery?.fire_and_forget, tls: t,
    tls_verify: f.tls?.verify === undefined ? '' : String(f.tls.verify),
    http_path: f.http?.path ?? '', http_method: f.http?.method ?? '',
    http_headers: lines(f.http?.headers), http_header_files: lines(f.http?.header_files) };
}

function num(s: string): number | string { return /^-?\d+$/.test(s.trim()) ? Number(s) : s; }

function toFeed(f: Form, inlineFilter: unknown): any {
  const o: any = { name: f.name.trim(), transport: f.transport, encoding: f.encoding,
    endpoints: f.endpoints.map((e) => ({ url: e.url.trim(), weight: num(e.weight || '1') })) };
  if (f.source_topic.trim()) o.source_topic = f.source_topic.trim();
  if (f.dlq_topic.trim()) o.dlq_topic = f.dlq_topic.trim();
  o.filter = f.filter === '__inline' ? inlineFilter : f.filter || null;
  const d: any = {};
  for (const [k] of DELIVERY) if ((f.delivery[k] ?? '').trim()) d[k] = num(f.delivery[k]);
  if (f.fire_and_forget) d.fire_and_forget = true;
  if (Object.keys(d).length) o.delivery = d;
  const t: any = {};
  for (const k of TLS) if ((f.tls[k] ?? '').trim()) t[k] = f.tls[k].trim();
  if (f.tls_verify) t.verify = f.tls_verify === 'true';
  if (Object.keys(t).length) o.tls = t;
  const h: any = {};
  if (f.http_path.trim()) h.path = f.http_path.trim();
  if (f.http_method) h.method = f.http_method;
  const hh = unlines(f.http_headers), hf = unlines(f.http_header_files);
  if (hh) h.headers = hh;
  if (hf) h.header_files = hf;
  if (Object.keys(h).length) o.http = h;
  return o;
}

function known(f: Form): string[] {
  return ['name', 'source_topic', 'dlq_topic', 'transport', 'encoding', 'filter', 'endpoints',
    ...f.endpoints.flatMap((_, i) => [`endpoints[${i}].url`, `endpoints[${i}].weight`]),
    ...DELIVERY.map(([k]) => 'delivery.' + k), 'delivery.fire_and_forget', 'delivery',
    ...TLS.map((k) => 'tls.' + k), 'tls.verify', 'tls', 'http.path', 'http.method', 'http.headers',
    'http.header_files', 'http'];
}

/** A client-side hint before the round trip; the server stays the judge. */
function hintUrl(transport: string, url: string): string {
  if (!url) return '';
  const ok = transport === 'http2' ? /^https?:\/\/[^/\s]+/.test(url) : new RegExp(`^${transport}://[^/\\s]+:\\d+$`).test(url);
  return ok ? '' : transport === 'http2' ? 'expected http://host[:port][/path] or https://…' : `expected ${transport}://host:port`;
}

function FeedForm(p: { id: string | null; onDone: () => void }) {
  const [f, setF] = useState<Form>(empty());
  const [inline, setInline] = useState<unknown>(null);
  const [etag, setEtag] = useState<string | null>(null);
  const [errs, setErrs] = useState<Record<string, string>>({});
  const [top, setTop] = useState('');
  const [filters, setFilters] = useState<string[]>([]);
  useEffect(() => {
    request('GET', '/api/v1/filters?limit=1000').then((r) => r.status === 200 && setFilters(r.data.items.map((x: any) => x.name)));
    if (p.id) request('GET', '/api/v1/feeds/' + p.id).then((r) => {
      if (r.status !== 200) { setTop(describe(errorOf(r))); return; }
      setF(fromFeed(r.data)); setEtag(r.etag);
      if (r.data.filter && typeof r.data.filter === 'object') setInline(r.data.filter);
    });
  }, [p.id]);
  const set = (patch: Partial<Form>) => setF({ ...f, ...patch });
  const save = async (e: Event) => {
    e.preventDefault();
    setErrs({}); setTop('');
    const body = toFeed(f, inline);
    const r = p.id ? await request('PUT', '/api/v1/feeds/' + p.id, body, etag)
                   : await request('POST', '/api/v1/feeds', body);
    if (r.status === 200 || r.status === 201) { p.onDone(); return; }
    if (r.status === 412) {
      setTop('This feed was changed by someone else after you opened it (412 Precondition Failed). ' +
             'Your edits are still in the form: reload the feed to see the current version, then apply them again.');
      return;
    }
    const pl = placeError(errorOf(r), known(f));
    setErrs(pl.fields); setTop(pl.top);
    const first = Object.keys(pl.fields)[0];
    if (first) setTimeout(() => (document.getElementById('f-' + first.replace(/[^A-Za-z0-9_-]/g, '_')) as HTMLElement | null)?.focus(), 0);
  };
  return (
    <form class="feed-form" onSubmit={save} aria-labelledby="form-title" noValidate>
      <h2 id="form-title">{p.id ? `Edit feed ${f.name}` : 'New feed'}</h2>
      {top && <Status kind="error" msg={top} />}
      <fieldset><legend>Feed</legend>
        <Field path="name" label="Name" required value={f.name} errors={errs} hint="[A-Za-z0-9._-], at most 64"
               onInput={(v) => set({ name: v })} />
        <Field path="source_topic" label="Source topic" value={f.source_topic} errors={errs} placeholder="MAIN" onInput={(v) => set({ source_topic: v })} />
        <Field path="dlq_topic" label="Dead-letter topic" value={f.dlq_topic} errors={errs} placeholder="ndd.dlq.<name>" onInput={(v) => set({ dlq_topic: v })} />
        <Select path="transport" label="Transport" value={f.transport} errors={errs}
                options={[['http2', 'HTTP/2'], ['tcp', 'TCP'], ['tls', 'TLS']]}
                onChange={(v) => set({ transport: v, encoding: v === 'http2' ? f.encoding : 'frame' })} />
        <Select path="encoding" label="Encoding" value={f.encoding} errors={errs}
                options={[['json', 'JSON'], ['frame', 'binary frame']]} onChange={(v) => set({ encoding: v })} />
        <Select path="filter" label="Filter" value={f.filter} errors={errs}
                options={[['', '(none: every copy)'], ...filters.map((n) => [n, n] as [string, string]),
                  ...(inline ? [['__inline', '(inline filter)'] as [string, string]] : [])]}
                onChange={(v) => set({ filter: v })} />
      </fieldset>
      <fieldset><legend>Endpoints</legend>
        {errs['endpoints'] && <span class="error" role="alert">{errs['endpoints']}</span>}
        {f.endpoints.map((ep, i) => (
          <div class="row">
            <Field path={`endpoints[${i}].url`} label={`Endpoint ${i + 1} URL`} required value={ep.url}
                   errors={{ ...errs, ...(errs[`endpoints[${i}].url`] || !hintUrl(f.transport, ep.url) ? {} : { [`endpoints[${i}].url`]: hintUrl(f.transport, ep.url) }) }}
                   onInput={(v) => set({ endpoints: f.endpoints.map((x, j) => (j === i ? { ...x, url: v } : x)) })} />
            <Field path={`endpoints[${i}].weight`} label="Weight" type="number" value={ep.weight} errors={errs} hint="1–1000"
                   onInput={(v) => set({ endpoints: f.endpoints.map((x, j) => (j === i ? { ...x, weight: v } : x)) })} />
            {f.endpoints.length > 1 && (
              <button type="button" class="secondary" aria-label={`Remove endpoint ${i + 1}`}
                      onClick={() => set({ endpoints: f.endpoints.filter((_, j) => j !== i) })}>Remove</button>
            )}
          </div>
        ))}
        <button type="button" class="secondary" onClick={() => set({ endpoints: [...f.endpoints, { url: '', weight: '1' }] })}>Add endpoint</button>
      </fieldset>
      <details><summary>Delivery settings</summary><fieldset><legend>Delivery</legend>
        <div class="grid">
          {DELIVERY.map(([k, h]) => (
            <Field path={'delivery.' + k} label={k} type="number" value={f.delivery[k] ?? ''} errors={errs} hint={h}
                   onInput={(v) => set({ delivery: { ...f.delivery, [k]: v } })} />
          ))}
        </div>
        <Check path="delivery.fire_and_forget" label="fire_and_forget (tcp and tls only)" checked={f.fire_and_forget}
               onChange={(v) => set({ fire_and_forget: v })} />
      </fieldset></details>
      <details><summary>TLS</summary><fieldset><legend>TLS files (names on the adapter's host)</legend>
        <div class="grid">
          {TLS.map((k) => (
            <Field path={'tls.' + k} label={k} value={f.tls[k] ?? ''} errors={errs}
                   onInput={(v) => set({ tls: { ...f.tls, [k]: v } })} />
          ))}
          <Select path="tls.verify" label="verify" value={f.tls_verify} errors={errs}
                  options={[['', '(default: on)'], ['true', 'on'], ['false', 'off']]} onChange={(v) => set({ tls_verify: v })} />
        </div>
      </fieldset></details>
      <details><summary>HTTP</summary><fieldset><legend>HTTP (http2 transport)</legend>
        <Field path="http.path" label="path" value={f.http_path} errors={errs} hint="starts with /" onInput={(v) => set({ http_path: v })} />
        <Select path="http.method" label="method" value={f.http_method} errors={errs}
                options={[['', '(default POST)'], ['POST', 'POST'], ['PUT', 'PUT'], ['PATCH', 'PATCH']]} onChange={(v) => set({ http_method: v })} />
        <div class="field"><label for="f-http_headers">headers (one "name: value" a line)</label>
          <textarea id="f-http_headers" value={f.http_headers} onInput={(e) => set({ http_headers: (e.target as HTMLTextAreaElement).value })} />
          {errs['http.headers'] && <span class="error" role="alert">{errs['http.headers']}</span>}</div>
        <div class="field"><label for="f-http_header_files">header_files (one "name: /path/of/secret" a line)</label>
          <textarea id="f-http_header_files" value={f.http_header_files} onInput={(e) => set({ http_header_files: (e.target as HTMLTextAreaElement).value })} />
          {errs['http.header_files'] && <span class="error" role="alert">{errs['http.header_files']}</span>}</div>
      </fieldset></details>
      <div class="actions">
        <button type="submit">{p.id ? 'Save changes' : 'Create feed'}</button>
        <button type="button" class="secondary" onClick={p.onDone}>Cancel</button>
      </div>
    </form>
  );
}

export function Feeds(p: { admin: boolean }) {
  const [items, setItems] = useState<any[]>([]);
  const [status, setStatus] = useState<Record<string, any>>({});
  const [editing, setEditing] = useState<string | null | undefined>(undefined);
  const [msg, setMsg] = useState('');
  const load = async () => {
    const r = await request('GET', '/api/v1/feeds?limit=1000');
    if (r.status === 200) setItems(r.data.items);
    const s = await request('GET', '/api/v1/status');
    if (s.status === 200) setStatus(Object.fromEntries((s.data.feeds ?? []).map((x: any) => [x.name, x])));
  };
  useEffect(() => { load(); }, []);
  const del = async (f: any) => {
    if (!confirm(`Delete feed ${f.name}? Its copies stop being delivered.`)) return;
    const r = await request('DELETE', '/api/v1/feeds/' + f.id);
    setMsg(r.status === 204 ? `Feed ${f.name} deleted.` : describe(errorOf(r)));
    load();
  };
  if (editing !== undefined)
    return <Page title="Feeds"><FeedForm id={editing} onDone={() => { setEditing(undefined); load(); }} /></Page>;
  return (
    <Page title="Feeds">
      {msg && <Status msg={msg} />}
      {p.admin && <button type="button" data-testid="new-feed" onClick={() => setEditing(null)}>New feed</button>}
      <table>
        <thead><tr><th scope="col">Name</th><th scope="col">Transport</th><th scope="col">Endpoints</th>
          <th scope="col">Health</th><th scope="col">Delivered</th><th scope="col">Version</th>{p.admin && <th scope="col">Actions</th>}</tr></thead>
        <tbody>
          {items.map((f) => (
            <tr data-testid={'feed-' + f.name}>
              <th scope="row">{f.name}</th><td>{f.transport ?? 'http2'}</td>
              <td>{f.endpoints.map((e: any) => e.url).join(', ')}</td>
              <td>{status[f.name]?.health ?? 'no heartbeat yet'}</td>
              <td>{status[f.name]?.delivered_total ?? '–'}</td><td>{f.version}</td>
              {p.admin && <td>
                <button type="button" class="secondary" aria-label={`Edit ${f.name}`} onClick={() => setEditing(f.id)}>Edit</button>
                <button type="button" class="danger" aria-label={`Delete ${f.name}`} onClick={() => del(f)}>Delete</button>
              </td>}
            </tr>
          ))}
        </tbody>
      </table>
    </Page>
  );
}

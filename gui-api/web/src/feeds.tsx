// Feeds: the list with what runs (rate, lag and its trend, latency, dead letters, endpoint
// states, health), the feeds adapters run from a feeds file (read-only), and the form drawn
// from the admin's own description of a feed (schema.tsx). An edit sends a JSON merge patch
// of only the members the operator changed, with If-Match; a 412 says someone else changed it.
import { useEffect, useState } from 'preact/hooks';
import { describe, errorOf, request } from './api';
import type { FeedSchema, Option, Path, Transport } from './schema';
import { OptionField, diffPatch, getIn, knownPaths, pruneEmpty, setIn } from './schema';
import { Page, Select, Status, placeError } from './ui';
import { fmt, Health, Lag } from './live';

const SERVER_FIELDS = ['id', 'version', 'created_at', 'updated_at'];
let schemaCache: FeedSchema | null = null;

export async function feedSchema(): Promise<FeedSchema | string> {
  if (schemaCache) return schemaCache;
  const r = await request<FeedSchema>('GET', '/api/v1/schema/feeds');
  if (r.status !== 200) return 'the admin did not describe its feeds: ' + describe(errorOf(r));
  schemaCache = r.data;
  return r.data;
}

const optNamed = (opts: Option[], n: string) => opts.find((o) => o.name === n);

function FeedForm(p: { id: string | null; schema: FeedSchema; onDone: (msg: string) => void }) {
  const s = p.schema;
  // A new feed starts with the rows its required lists need (one endpoint).
  const [value, setValue] = useState<any>(() => (p.id ? {} : Object.fromEntries(s.feed
    .filter((o) => o.type === 'array' && (o.required || (o.minItems ?? 0) > 0))
    .map((o) => [o.name, Array.from({ length: Math.max(1, o.minItems ?? 0) }, () => ({}))]))));
  const [orig, setOrig] = useState<any>(null);
  const [etag, setEtag] = useState<string | null>(null);
  const [errs, setErrs] = useState<Record<string, string>>({});
  const [top, setTop] = useState('');
  const [filters, setFilters] = useState<string[]>([]);
  const [loaded, setLoaded] = useState(!p.id);
  useEffect(() => {
    request('GET', '/api/v1/filters?limit=1000').then((r) => r.status === 200 && setFilters(r.data.items.map((x: any) => x.name)));
    if (p.id) request('GET', '/api/v1/feeds/' + p.id).then((r) => {
      if (r.status !== 200) { setTop(describe(errorOf(r))); return; }
      setValue(r.data); setOrig(r.data); setEtag(r.etag); setLoaded(true);
    });
  }, [p.id]);

  const tOpt = optNamed(s.feed, 'transport'), eOpt = optNamed(s.feed, 'encoding');
  const trName: string = value.transport ?? (tOpt?.default as string) ?? s.transports[0]?.name;
  const tr: Transport | undefined = s.transports.find((t) => t.name === trName);
  const encName: string = value.encoding ?? (eOpt?.default as string) ?? tr?.encodings[0];
  const enc = s.encodings.find((e) => e.name === encName);
  const set = (path: Path, v: any) => setValue((old: any) => setIn(old, path, v));

  const chooseTransport = (name: string) => {
    const nt = s.transports.find((t) => t.name === name);
    if (!nt) return;
    let v = { ...value, transport: name };
    if (tr?.member && tr.member !== nt.member) delete v[tr.member];
    for (const o of s.feed) /* a section the new transport does not take is dropped */
      if (o.type === 'object' && tr?.sections.includes(o.name) && !nt.sections.includes(o.name)) delete v[o.name];
    if (!nt.fire_and_forget && v.delivery?.fire_and_forget !== undefined) v = setIn(v, ['delivery', 'fire_and_forget'], undefined);
    if (!nt.encodings.includes(encName)) {
      if (enc?.member) delete v[enc.member];
      v.encoding = nt.encodings[0];
    }
    setValue(v);
  };
  const chooseEncoding = (name: string) => {
    const v = { ...value, encoding: name };
    if (enc?.member && enc.name !== name) delete v[enc.member];
    setValue(v);
  };

  // Which options show: the feed's own (sections only when the transport takes them), the
  // transport's member, the encoding's member.
  const visible = (o: Option) => o.type !== 'object' || !tr || tr.sections.includes(o.name);
  const strip = (o: Option): Option => (o.name === 'delivery' && o.options && tr && !tr.fire_and_forget
    ? { ...o, options: o.options.filter((c) => c.name !== 'fire_and_forget') } : o);
  const main = s.feed.filter((o) => !['object', 'array'].includes(o.type) && !['transport', 'encoding'].includes(o.name));
  const lists = s.feed.filter((o) => o.type === 'array');
  const sections = s.feed.filter((o) => o.type === 'object' && visible(o)).map(strip);
  const members: [string, string, Option[]][] = [];
  if (tr?.member) members.push([tr.member, `${tr.name} transport settings`, tr.options]);
  if (enc?.member) members.push([enc.member, `${enc.name} encoding settings`, enc.options]);
  const known = () => ['transport', 'encoding', ...knownPaths(s.feed, value, []),
    ...members.flatMap(([m, , opts]) => [m, ...knownPaths(opts, value, [m])])];
  const urlHint = (url: string) => {
    const ex = tr?.url_example ? `e.g. ${tr.url_example}` : '';
    const scheme = /^([a-z0-9+.-]+):\/\//i.exec(url)?.[1];
    const wrong = url && tr && (!scheme || !tr.schemes.includes(scheme.toLowerCase()));
    return wrong ? `${ex}; transport ${tr!.name} takes ${tr!.schemes.map((x) => x + '://').join(' or ')}` : ex;
  };
  const ctx = { value, set, errors: errs, filters, inlineFilter: !!(orig?.filter && typeof orig.filter === 'object'), urlHint };

  const save = async (e: Event) => {
    e.preventDefault();
    setErrs({}); setTop('');
    let r;
    if (p.id) {
      const patch = diffPatch(orig, value, SERVER_FIELDS);
      if (!Object.keys(patch).length) { setTop('Nothing changed: no field differs from the feed as read.'); return; }
      r = await request('PATCH', '/api/v1/feeds/' + p.id, patch, etag);
    } else {
      r = await request('POST', '/api/v1/feeds', pruneEmpty(value));
    }
    if (r.status === 200 || r.status === 201) { p.onDone(p.id ? `Feed ${r.data.name} saved (version ${r.data.version}).` : `Feed ${r.data.name} created.`); return; }
    if (r.status === 412) {
      setTop('This feed was changed by someone else after you opened it (412 Precondition Failed). ' +
             'Your edits are still in the form: reload the feed to see the current version, then apply them again.');
      return;
    }
    const pl = placeError(errorOf(r), known());
    setErrs(pl.fields); setTop(pl.top);
    const first = Object.keys(pl.fields)[0];
    if (first) setTimeout(() => (document.getElementById('f-' + first.replace(/[^A-Za-z0-9_-]/g, '_')) as HTMLElement | null)?.focus(), 0);
  };
  if (!loaded) return <>{top ? <Status kind="error" msg={top} /> : <p>Loading the feed…</p>}</>;
  const open = (name: string) => getIn(value, [name]) !== undefined || Object.keys(errs).some((k) => k === name || k.startsWith(name + '.'));
  return (
    <form class="feed-form" onSubmit={save} aria-labelledby="form-title" noValidate>
      <h2 id="form-title">{p.id ? `Edit feed ${orig?.name ?? ''}` : 'New feed'}</h2>
      {top && <Status kind="error" msg={top} />}
      <fieldset><legend>Feed</legend>
        <div class="grid">
          {main.filter((o) => o.type !== 'filter').map((o) => <OptionField o={o} path={[o.name]} ctx={ctx} />)}
          <Select path="transport" label="transport" value={trName} errors={errs} hint={tOpt?.help}
                  options={s.transports.map((t) => [t.name, t.name] as [string, string])} onChange={chooseTransport} />
          <Select path="encoding" label="encoding" value={encName} errors={errs} hint={eOpt?.help}
                  options={(tr?.encodings ?? []).map((n) => [n, n] as [string, string])} onChange={chooseEncoding} />
          {main.filter((o) => o.type === 'filter').map((o) => <OptionField o={o} path={[o.name]} ctx={ctx} />)}
        </div>
        {tr && <p class="hint" data-testid="transport-facts">{tr.name}: {tr.acknowledged === 'durable' ? 'acknowledged once stored' : 'acknowledged by the peer'}
          {tr.exactly_once ? ', exactly once' : ''}{tr.fire_and_forget ? ', fire-and-forget allowed' : ''}; carries {tr.encodings.join(', ')}.</p>}
      </fieldset>
      {lists.map((o) => <OptionField o={o} path={[o.name]} ctx={ctx} />)}
      {members.map(([m, title, opts]) => (
        <fieldset data-testid={'member-' + m}><legend>{title} (“{m}”)</legend>
          {errs[m] && <span class="error" role="alert">{errs[m]}</span>}
          <div class="grid">{opts.map((o) => <OptionField o={o} path={[m, o.name]} ctx={ctx} />)}</div>
        </fieldset>
      ))}
      {sections.map((o) => (
        <details open={open(o.name)}><summary>{o.name} settings</summary>
          <OptionField o={o} path={[o.name]} ctx={ctx} />
        </details>
      ))}
      <div class="actions">
        <button type="submit">{p.id ? 'Save changes' : 'Create feed'}</button>
        <button type="button" class="secondary" onClick={() => p.onDone('')}>Cancel</button>
      </div>
    </form>
  );
}

function endpointState(f: any, st: any): string {
  const n = (f.endpoints ?? []).length;
  if (!st || st.endpoints_down === undefined) return `${n} endpoint${n === 1 ? '' : 's'}`;
  return st.endpoints_down ? `${st.endpoints_down} of ${n} down` : `${n} of ${n} up`;
}

function FeedRow(p: { f: any; st: any; admin: boolean; readOnly?: string; onEdit: () => void; onDelete: () => void }) {
  const { f, st } = p;
  return (
    <tr data-testid={'feed-' + f.name} class={p.readOnly ? 'readonly' : ''}>
      <th scope="row">{f.name}{p.readOnly && <><br /><small class="origin" data-testid={'origin-' + f.name}>{p.readOnly}</small></>}</th>
      <td>{f.transport ?? (p.readOnly ? '–' : 'http2')}</td>
      <td>{(f.endpoints ?? []).map((e: any) => e.url).join(', ')}{f.endpoints && <br />}<small>{endpointState(f, st)}</small></td>
      <td><Health h={st?.health} /></td>
      <td class="num" data-testid={'list-rate-' + f.name}>{fmt(st?.rate_per_s)}</td>
      <td class="num"><Lag lag={st?.lag} trend={st?.lag_trend_per_s} /></td>
      <td class="num">{st?.latency_ms ? `${fmt(st.latency_ms.p50, 1)} / ${fmt(st.latency_ms.p99, 1)}` : '–'}</td>
      <td class="num">{st?.dead_lettered_total ?? '–'}</td>
      <td>{f.version ?? '–'}</td>
      {p.admin && <td>{!p.readOnly && <>
        <button type="button" class="secondary" aria-label={`Edit ${f.name}`} onClick={p.onEdit}>Edit</button>
        <button type="button" class="danger" aria-label={`Delete ${f.name}`} onClick={p.onDelete}>Delete</button>
      </>}</td>}
    </tr>
  );
}

export function Feeds(p: { admin: boolean }) {
  const [items, setItems] = useState<any[] | null>(null);
  const [status, setStatus] = useState<any[]>([]);
  const [schema, setSchema] = useState<FeedSchema | null>(null);
  const [editing, setEditing] = useState<string | null | undefined>(undefined);
  const [msg, setMsg] = useState('');
  const [err, setErr] = useState('');
  const loadStatus = async () => {
    const s = await request('GET', '/api/v1/status');
    if (s.status === 200) setStatus(s.data.feeds ?? []);
  };
  const load = async () => {
    const r = await request('GET', '/api/v1/feeds?limit=1000');
    if (r.status === 200) { setItems(r.data.items); setErr(''); } else setErr(describe(errorOf(r)));
    await loadStatus();
  };
  useEffect(() => {
    if (editing !== undefined) return; /* the list refreshes while shown, not under the form */
    load();
    const t = setInterval(load, 2000);
    return () => clearInterval(t);
  }, [editing]);
  const edit = async (id: string | null) => {
    const s = await feedSchema();
    if (typeof s === 'string') { setErr(s); return; }
    setSchema(s); setEditing(id);
  };
  const del = async (f: any) => {
    if (!confirm(`Delete feed ${f.name}? Its copies stop being delivered.`)) return;
    const r = await request('DELETE', '/api/v1/feeds/' + f.id);
    setMsg(r.status === 204 ? `Feed ${f.name} deleted.` : describe(errorOf(r)));
    load();
  };
  if (editing !== undefined && schema)
    return <Page title="Feeds"><FeedForm id={editing} schema={schema} onDone={(m) => { setEditing(undefined); setMsg(m); }} /></Page>;
  const byName = Object.fromEntries(status.map((x) => [x.name, x]));
  const held = new Set((items ?? []).map((f) => f.name));
  const fromFile = status.filter((x) => x.origin === 'file' && !held.has(x.name));
  const cols = ['Name', 'Transport', 'Endpoints', 'Health', 'Copies/s', 'Lag (trend)', 'p50 / p99 ms', 'Dead letters', 'Version'];
  return (
    <Page title="Feeds">
      {msg && <Status msg={msg} />}
      {err && <Status kind="error" msg={err} />}
      {p.admin && <button type="button" data-testid="new-feed" onClick={() => edit(null)}>New feed</button>}
      <table>
        <caption class="sr-only">Feeds and what they deliver now</caption>
        <thead><tr>{cols.map((c, i) => <th scope="col" class={i >= 4 && i <= 7 ? 'num' : undefined}>{c}</th>)}{p.admin && <th scope="col">Actions</th>}</tr></thead>
        <tbody>
          {(items ?? []).map((f) => <FeedRow f={f} st={byName[f.name]} admin={p.admin} onEdit={() => edit(f.id)} onDelete={() => del(f)} />)}
          {fromFile.map((x) => <FeedRow f={{ name: x.name, transport: x.transport, endpoints: x.endpoints }} st={x} admin={p.admin}
            readOnly={`read-only: from the feeds file of ${(x.instances ?? []).join(', ') || 'an adapter'}`} onEdit={() => {}} onDelete={() => {}} />)}
        </tbody>
      </table>
      {items && !items.length && <p class="empty" data-testid="feeds-empty">
        The admin holds no feed yet. {p.admin ? 'Create one with “New feed”, or' : 'An admin creates them here or'} with <code>ndd-admin apply FILE</code>;
        each feed sends the copies of its source topic to its endpoints.</p>}
      {fromFile.length > 0 && <p class="hint">Feeds marked read-only run from an adapter's feeds file (<code>--feeds-file</code>):
        change them in that file, or move them into the admin with <code>ndd-admin apply</code>.</p>}
    </Page>
  );
}

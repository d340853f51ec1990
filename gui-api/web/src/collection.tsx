// Sources and correlation settings: the same list-and-form page over a field table
// (docs/api.md "Source", "Correlation"); blank optional fields are left out. Beside the
// admin's objects, what runs: the "aggregation" or "correlation" workers of /status.
import { useEffect, useState } from 'preact/hooks';
import { describe, errorOf, request } from './api';
import { Check, Field, Page, Select, Status, placeError } from './ui';
import { fmt } from './live';
import { diffPatch } from './schema';

/** What runs, from the workers' heartbeats in /status. */
export interface RunningDef { key: 'aggregation' | 'correlation'; title: string; cols: [string, string][]; empty: string; }
export const AGGREGATION_RUNNING: RunningDef = {
  key: 'aggregation', title: 'Aggregation workers running',
  cols: [['nf_type', 'NF type'], ['instance', 'Instance'], ['state', 'State'], ['topic', 'Topic'], ['rate_per_s', 'Copies/s'],
    ['consumed_total', 'Consumed'], ['dead_lettered_total', 'Dead letters'], ['filter', 'Filter']],
  empty: 'No aggregation worker reports: start ndd-aggregation (one per NF type); it shows here at its first heartbeat, if it sends heartbeats to the events topic the admin reads (--events-topic, default ndd.events).',
};
export const CORRELATION_RUNNING: RunningDef = {
  key: 'correlation', title: 'Correlation workers running',
  cols: [['instance', 'Instance'], ['state', 'State'], ['source_topic', 'Source topic'], ['xdr_topic', 'xDR topic'], ['timeout_ms', 'Timeout ms'],
    ['open', 'Open'], ['xdrs_total', 'xDRs'], ['rate_per_s', 'xDRs/s']],
  empty: 'No correlation worker reports: start ndd-correlation; it shows here at its first heartbeat, if it sends heartbeats to the events topic the admin reads (--events-topic, default ndd.events).',
};

function cell(v: any): string {
  if (v === undefined || v === null) return '–';
  if (typeof v === 'number') return Number.isInteger(v) ? String(v) : fmt(v);
  if (typeof v === 'object') return v.name ?? JSON.stringify(v);
  return String(v);
}

function Running(p: { def: RunningDef }) {
  const [rows, setRows] = useState<any[] | null>(null);
  useEffect(() => {
    const poll = async () => {
      const r = await request('GET', '/api/v1/status');
      if (r.status === 200) setRows(r.data[p.def.key] ?? []);
    };
    poll();
    const t = setInterval(poll, 3000);
    return () => clearInterval(t);
  }, [p.def.key]);
  return (
    <section aria-labelledby={'running-' + p.def.key}>
      <h2 id={'running-' + p.def.key}>{p.def.title}</h2>
      {rows && !rows.length && <p class="empty" data-testid="running-empty">{p.def.empty}</p>}
      {rows && rows.length > 0 && <table data-testid="running">
        <thead><tr>{p.def.cols.map(([, t]) => <th scope="col">{t}</th>)}</tr></thead>
        <tbody>{rows.map((x) => <tr>{p.def.cols.map(([k]) => <td>{cell(x[k])}</td>)}</tr>)}</tbody>
      </table>}
    </section>
  );
}

export interface Def { key: string; label: string; kind: 'text' | 'int' | 'bool' | 'enum'; options?: string[]; hint?: string; required?: boolean; }

export const SOURCE_FIELDS: Def[] = [
  { key: 'name', label: 'Name', kind: 'text', required: true },
  { key: 'type', label: 'NF type', kind: 'enum', options: ['SCP', 'NRF', 'SEPP', 'BSF', 'PCF', 'NON_NF'], required: true },
  { key: 'topic', label: 'Topic', kind: 'text', required: true },
  { key: 'partitions', label: 'Partitions', kind: 'int', hint: '1–10000' },
  { key: 'replication', label: 'Replication', kind: 'int', hint: '1–16' },
  { key: 'retention_ms', label: 'Retention (ms)', kind: 'int', hint: '-1 = forever, else ≥ 60000' },
  { key: 'description', label: 'Description', kind: 'text' },
];
export const CORRELATION_FIELDS: Def[] = [
  { key: 'name', label: 'Name', kind: 'text', required: true },
  { key: 'enabled', label: 'Enabled', kind: 'bool' },
  { key: 'source_topic', label: 'Source topic', kind: 'text' },
  { key: 'xdr_topic', label: 'xDR topic', kind: 'text' },
  { key: 'timeout_ms', label: 'Timeout (ms)', kind: 'int', hint: '1–600000 (worker default 5000)' },
  { key: 'max_open_per_partition', label: 'Max open per partition', kind: 'int', hint: '1–100000000' },
  { key: 'extract_subscriber', label: 'Extract SUPI/GPSI', kind: 'bool' },
  { key: 'description', label: 'Description', kind: 'text' },
];

function Form(p: { coll: string; fields: Def[]; id: string | null; onDone: () => void }) {
  const [v, setV] = useState<Record<string, any>>({});
  const [etag, setEtag] = useState<string | null>(null);
  const [orig, setOrig] = useState<any>({});
  const [errs, setErrs] = useState<Record<string, string>>({});
  const [top, setTop] = useState('');
  useEffect(() => {
    if (p.id) request('GET', `/api/v1/${p.coll}/${p.id}`).then((r) => { if (r.status === 200) { setV(r.data); setOrig(r.data); setEtag(r.etag); } });
  }, [p.id]);
  const save = async (e: Event) => {
    e.preventDefault(); setErrs({}); setTop('');
    const o: any = {};
    for (const d of p.fields) {
      const x = v[d.key];
      if (x === undefined || x === '') continue;
      o[d.key] = d.kind === 'int' && /^-?\d+$/.test(String(x)) ? Number(x) : x;
    }
    // An edit patches only what changed (members the form does not show are kept as stored).
    let r;
    if (p.id) {
      const after: any = { ...orig };
      for (const d of p.fields) { if (o[d.key] === undefined) delete after[d.key]; else after[d.key] = o[d.key]; }
      const patch = diffPatch(orig, after, ['id', 'version', 'created_at', 'updated_at']);
      if (!Object.keys(patch).length) return setTop('Nothing changed.');
      r = await request('PATCH', `/api/v1/${p.coll}/${p.id}`, patch, etag);
    } else r = await request('POST', `/api/v1/${p.coll}`, o);
    if (r.status === 200 || r.status === 201) return p.onDone();
    if (r.status === 412) return setTop('Changed by someone else after you opened it (412): reload and apply your edits again.');
    const pl = placeError(errorOf(r), p.fields.map((d) => d.key)); setErrs(pl.fields); setTop(pl.top);
  };
  return (
    <form onSubmit={save} noValidate aria-labelledby="form-title">
      <h2 id="form-title">{p.id ? `Edit ${v.name ?? ''}` : 'New'}</h2>
      {top && <Status kind="error" msg={top} />}
      <div class="grid">
        {p.fields.map((d) => d.kind === 'bool'
          ? <Check path={d.key} label={d.label} checked={!!v[d.key]} onChange={(x) => setV({ ...v, [d.key]: x })} />
          : d.kind === 'enum'
            ? <Select path={d.key} label={d.label} value={v[d.key] ?? ''} errors={errs} options={[['', '(choose)'], ...d.options!.map((o) => [o, o] as [string, string])]} onChange={(x) => setV({ ...v, [d.key]: x })} />
            : <Field path={d.key} label={d.label} type={d.kind === 'int' ? 'number' : 'text'} required={d.required} hint={d.hint}
                     value={v[d.key] === undefined ? '' : String(v[d.key])} errors={errs} onInput={(x) => setV({ ...v, [d.key]: x })} />)}
      </div>
      <div class="actions"><button type="submit">Save</button><button type="button" class="secondary" onClick={p.onDone}>Cancel</button></div>
    </form>
  );
}

export function Collection(p: { admin: boolean; coll: string; title: string; fields: Def[]; running: RunningDef; empty: string }) {
  const [items, setItems] = useState<any[] | null>(null);
  const [editing, setEditing] = useState<string | null | undefined>(undefined);
  const [msg, setMsg] = useState('');
  const load = async () => { const r = await request('GET', `/api/v1/${p.coll}?limit=1000`); if (r.status === 200) setItems(r.data.items); };
  useEffect(() => { setEditing(undefined); load(); }, [p.coll]);
  const del = async (o: any) => {
    if (!confirm(`Delete ${o.name}?`)) return;
    const r = await request('DELETE', `/api/v1/${p.coll}/${o.id}`);
    setMsg(r.status === 204 ? `${o.name} deleted.` : describe(errorOf(r))); load();
  };
  if (editing !== undefined) return <Page title={p.title}><Form coll={p.coll} fields={p.fields} id={editing} onDone={() => { setEditing(undefined); load(); }} /></Page>;
  const cols = p.fields.filter((d) => d.key !== 'description');
  return (
    <Page title={p.title}>
      {msg && <Status msg={msg} />}
      <Running def={p.running} />
      <h2>In the admin</h2>
      {p.admin && <button type="button" onClick={() => setEditing(null)}>New</button>}
      {items && !items.length && <p class="empty" data-testid="admin-empty">{p.empty}</p>}
      {items && items.length > 0 && <table><thead><tr>{cols.map((d) => <th scope="col">{d.label}</th>)}{p.admin && <th scope="col">Actions</th>}</tr></thead>
        <tbody>{items.map((o) => (
          <tr>{cols.map((d) => <td>{o[d.key] === undefined ? '–' : String(o[d.key])}</td>)}
            {p.admin && <td><button type="button" class="secondary" onClick={() => setEditing(o.id)}>Edit</button>
              <button type="button" class="danger" onClick={() => del(o)}>Delete</button></td>}</tr>
        ))}</tbody></table>}
    </Page>
  );
}

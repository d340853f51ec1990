// Filters: the rule editor for the language of docs/filters.md (a predicate per rule, or any
// match expression as JSON for all/any/not), the default action, and a test box that
// decides a sample copy with the workers' own engine (POST /console/filter-test).
import { useEffect, useState } from 'preact/hooks';
import { describe, errorOf, request } from './api';
import { Field, Page, Select, Status, placeError } from './ui';

const OPS = ['equals', 'not-equals', 'prefix', 'suffix', 'contains', 'regex', 'one-of', 'exists',
  'absent', 'lt', 'le', 'gt', 'ge', 'between'];
interface Rule { name: string; action: string; field: string; op: string; value: string; icase: boolean; json: string; }

function toRule(r: any): Rule {
  const m = r.match ?? {};
  const simple = typeof m.field === 'string';
  const v = m.value;
  return { name: r.name ?? '', action: r.action ?? 'allow', field: simple ? m.field : '', op: simple ? m.op : 'equals',
    value: v === undefined ? '' : Array.isArray(v) ? v.join(',') : String(v), icase: !!m.icase,
    json: simple ? '' : JSON.stringify(m, null, 1) };
}

function matchOf(r: Rule): any {
  if (r.json.trim()) return JSON.parse(r.json);
  const m: any = { field: r.field, op: r.op };
  if (r.op === 'one-of') m.value = r.value.split(',').map((s) => s.trim());
  else if (r.op === 'between') m.value = r.value.split(',').map((s) => Number(s.trim()));
  else if (['lt', 'le', 'gt', 'ge'].includes(r.op)) m.value = Number(r.value);
  else if (!['exists', 'absent'].includes(r.op)) m.value = r.value;
  if (r.icase) m.icase = true;
  return m;
}

const SAMPLE = JSON.stringify({ '@correlation-id': 'c1', '@timestamp-us': String(Date.now() * 1000),
  '@message-type': 'request', '@trigger-point': 'rx-request', '@nf-type': 'SCP',
  ':method': 'POST', ':path': '/nudm-sdm/v2/imsi-001010000000001/am-data' }, null, 1);

function Editor(p: { id: string | null; admin: boolean; onDone: () => void }) {
  const [name, setName] = useState('');
  const [def, setDef] = useState('allow');
  const [rules, setRules] = useState<Rule[]>([]);
  const [etag, setEtag] = useState<string | null>(null);
  const [errs, setErrs] = useState<Record<string, string>>({});
  const [top, setTop] = useState('');
  const [sample, setSample] = useState(SAMPLE);
  const [body, setBody] = useState('');
  const [result, setResult] = useState('');
  useEffect(() => {
    if (p.id) request('GET', '/api/v1/filters/' + p.id).then((r) => {
      if (r.status !== 200) return setTop(describe(errorOf(r)));
      setName(r.data.name); setDef(r.data.default ?? 'allow'); setRules((r.data.rules ?? []).map(toRule)); setEtag(r.etag);
    });
  }, [p.id]);
  const spec = () => ({ name: name.trim(), default: def, rules: rules.map((r) => ({ name: r.name, action: r.action, match: matchOf(r) })) });
  const setRule = (i: number, patch: Partial<Rule>) => setRules(rules.map((r, j) => (j === i ? { ...r, ...patch } : r)));
  const known = ['name', 'default', 'rules', ...rules.flatMap((_, i) => [`rules[${i}].name`, `rules[${i}].action`, `rules[${i}].match`])];
  const show = (e: any) => { const pl = placeError(e, known); setErrs(pl.fields); setTop(pl.top); };
  const save = async (e: Event) => {
    e.preventDefault(); setErrs({}); setTop('');
    let s; try { s = spec(); } catch (x) { return setTop('a rule\'s match JSON does not parse: ' + x); }
    const r = p.id ? await request('PUT', '/api/v1/filters/' + p.id, s, etag) : await request('POST', '/api/v1/filters', s);
    if (r.status === 200 || r.status === 201) return p.onDone();
    if (r.status === 412) return setTop('This filter was changed by someone else after you opened it (412): reload it and apply your edits again.');
    show(errorOf(r));
  };
  const test = async () => {
    setResult('');
    let s, h; try { s = spec(); h = JSON.parse(sample); } catch (x) { return setResult('not JSON: ' + x); }
    const r = await request('POST', '/console/filter-test', { filter: s, sample: { headers: h, body } });
    if (r.status === 200) setResult(`${r.data.action.toUpperCase()} — ${r.data.rule >= 0 ? `rule ${r.data.rule} "${r.data.rule_name}"` : 'no rule matched: the default action'}`);
    else setResult(describe(errorOf(r)));
  };
  return (
    <form onSubmit={save} aria-labelledby="form-title" noValidate>
      <h2 id="form-title">{p.id ? `Edit filter ${name}` : 'New filter'}</h2>
      {top && <Status kind="error" msg={top} />}
      <Field path="name" label="Name" required value={name} errors={errs} onInput={setName} />
      <Select path="default" label="Default action (no rule matches)" value={def} errors={errs}
              options={[['allow', 'allow'], ['drop', 'drop']]} onChange={setDef} />
      {errs['rules'] && <span class="error" role="alert">{errs['rules']}</span>}
      {rules.map((r, i) => (
        <fieldset class="rule"><legend>Rule {i + 1}</legend>
          <div class="grid">
            <Field path={`rules[${i}].name`} label="Rule name" value={r.name} errors={errs} onInput={(v) => setRule(i, { name: v })} />
            <Select path={`rules[${i}].action`} label="Action" value={r.action} errors={errs} options={[['allow', 'allow'], ['drop', 'drop']]} onChange={(v) => setRule(i, { action: v })} />
            {!r.json && <>
              <Field path={`rules[${i}].match.field`} label="Field" value={r.field} errors={errs} hint="@nf-type, :method, :path, user-agent…" onInput={(v) => setRule(i, { field: v })} />
              <Select path={`rules[${i}].match.op`} label="Operator" value={r.op} errors={errs} options={OPS.map((o) => [o, o])} onChange={(v) => setRule(i, { op: v })} />
              <Field path={`rules[${i}].match.value`} label="Value" value={r.value} errors={errs} hint="one-of: a,b,c; between: lo,hi" onInput={(v) => setRule(i, { value: v })} />
            </>}
          </div>
          {errs[`rules[${i}].match`] && <span class="error" role="alert">{errs[`rules[${i}].match`]}</span>}
          <div class="field"><label for={`f-rule-json-${i}`}>Match as JSON (all / any / not; overrides the predicate above)</label>
            <textarea id={`f-rule-json-${i}`} value={r.json} onInput={(e) => setRule(i, { json: (e.target as HTMLTextAreaElement).value })} /></div>
          <button type="button" class="secondary" onClick={() => setRules(rules.filter((_, j) => j !== i))}>Remove rule {i + 1}</button>
        </fieldset>
      ))}
      <button type="button" class="secondary" onClick={() => setRules([...rules, { name: `r${rules.length + 1}`, action: 'allow', field: '@nf-type', op: 'equals', value: 'SCP', icase: false, json: '' }])}>Add rule</button>
      <fieldset><legend>Test a sample copy</legend>
        <div class="field"><label for="sample-headers">Headers (JSON object)</label>
          <textarea id="sample-headers" rows={8} value={sample} onInput={(e) => setSample((e.target as HTMLTextAreaElement).value)} /></div>
        <div class="field"><label for="sample-body">Body</label>
          <textarea id="sample-body" value={body} onInput={(e) => setBody((e.target as HTMLTextAreaElement).value)} /></div>
        <button type="button" class="secondary" data-testid="filter-test" onClick={test}>Test</button>
        {result && <p role="status" data-testid="filter-result">{result}</p>}
      </fieldset>
      <div class="actions">
        {p.admin && <button type="submit">{p.id ? 'Save changes' : 'Create filter'}</button>}
        <button type="button" class="secondary" onClick={p.onDone}>Back</button>
      </div>
    </form>
  );
}

export function Filters(p: { admin: boolean }) {
  const [items, setItems] = useState<any[] | null>(null);
  const [editing, setEditing] = useState<string | null | undefined>(undefined);
  const [msg, setMsg] = useState('');
  const load = async () => { const r = await request('GET', '/api/v1/filters?limit=1000'); if (r.status === 200) setItems(r.data.items); };
  useEffect(() => { load(); }, []);
  const del = async (f: any) => {
    if (!confirm(`Delete filter ${f.name}?`)) return;
    const r = await request('DELETE', '/api/v1/filters/' + f.id);
    setMsg(r.status === 204 ? `Filter ${f.name} deleted.` : describe(errorOf(r))); load();
  };
  if (editing !== undefined) return <Page title="Filters"><Editor id={editing} admin={p.admin} onDone={() => { setEditing(undefined); load(); }} /></Page>;
  return (
    <Page title="Filters">
      {msg && <Status msg={msg} />}
      {p.admin && <button type="button" onClick={() => setEditing(null)}>New filter</button>}
      {items && !items.length && <p class="empty">No filter yet: a filter decides which copies a feed (or an aggregation worker) carries.
        {p.admin ? ' Create one with “New filter” and try it on a sample copy.' : ''}</p>}
      {items && items.length > 0 && <table><thead><tr><th scope="col">Name</th><th scope="col">Default</th><th scope="col">Rules</th><th scope="col">Actions</th></tr></thead>
        <tbody>{items.map((f) => (
          <tr><th scope="row">{f.name}</th><td>{f.default}</td><td>{(f.rules ?? []).length}</td>
            <td><button type="button" class="secondary" onClick={() => setEditing(f.id)}>{p.admin ? 'Edit / test' : 'View / test'}</button>
              {p.admin && <button type="button" class="danger" onClick={() => del(f)}>Delete</button>}</td></tr>
        ))}</tbody></table>}
    </Page>
  );
}

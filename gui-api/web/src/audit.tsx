// The audit log: who changed what, newest first, and a line diff of before and after that
// reads in order (removed lines before the lines that replace them) without the server's
// bookkeeping (version, updated_at, created_at). Token and alarm actions are rows too.
import { useEffect, useState } from 'preact/hooks';
import { request } from './api';
import { Page } from './ui';

/** A line diff (longest common subsequence): [' '|'-'|'+', line][]; at a change, the
 * removed lines come first, then the added ones. */
export function diff(a: string[], b: string[]): [string, string][] {
  const n = a.length, m = b.length;
  const L = Array.from({ length: n + 1 }, () => new Array<number>(m + 1).fill(0));
  for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--)
    L[i][j] = a[i] === b[j] ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
  const out: [string, string][] = [];
  let i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] === b[j]) { out.push([' ', a[i]]); i++; j++; }
    else if (i < n && (j === m || L[i + 1][j] >= L[i][j + 1])) out.push(['-', a[i++]]);
    else out.push(['+', b[j++]]);
  }
  return out;
}

const NOISE = ['version', 'updated_at', 'created_at'];
function text(o: any): string[] {
  if (o === null || o === undefined) return [];
  const c = typeof o === 'object' && !Array.isArray(o) ? Object.fromEntries(Object.entries(o).filter(([k]) => !NOISE.includes(k))) : o;
  /* without the trailing commas: a member added after a line does not change that line */
  return JSON.stringify(c, null, 2).split('\n').map((l) => l.replace(/,$/, ''));
}

/** What a row is about: an object's name, a token's name, an alarm's type and resource. */
function what(e: any): string {
  const o = e.after ?? e.before ?? {};
  if (o.name) return o.name;
  if (o.type && o.resource) return `${o.type} on ${o.resource}`;
  return e.object_id ?? '–';
}

export function Audit() {
  const [items, setItems] = useState<any[] | null>(null);
  const [open, setOpen] = useState<number | null>(null);
  useEffect(() => { request('GET', '/api/v1/audit?limit=100').then((r) => r.status === 200 && setItems(r.data.items ?? r.data)); }, []);
  return (
    <Page title="Audit log">
      {items && !items.length && <p class="empty">No change recorded yet: every write through the admin (objects, tokens, alarm acknowledgements) adds a row here.</p>}
      {items && items.length > 0 && <table><thead><tr><th scope="col">When</th><th scope="col">Who</th><th scope="col">Action</th><th scope="col">Kind</th><th scope="col">Object</th><th scope="col">Changes</th></tr></thead>
        <tbody>{items.map((e) => (<>
          <tr data-testid="audit-row">
            <td>{String(e.at ?? '').replace('T', ' ').replace(/\.\d+Z$/, 'Z')}</td><td>{e.who}</td><td>{e.action}</td><td>{e.kind}</td>
            <td>{what(e)}</td>
            <td>{(e.before || e.after) && <button type="button" class="secondary" aria-expanded={open === e.id} onClick={() => setOpen(open === e.id ? null : e.id)}>
              {open === e.id ? 'Hide diff' : 'Show diff'}</button>}</td>
          </tr>
          {open === e.id && <tr><td colSpan={6}>
            <pre class="diff" tabIndex={0} aria-label="Differences, before to after">{diff(text(e.before), text(e.after)).map(([k, l]) =>
              <span class={k === '+' ? 'add' : k === '-' ? 'del' : ''}>{k} {l}{'\n'}</span>)}</pre>
          </td></tr>}
        </>))}</tbody></table>}
    </Page>
  );
}

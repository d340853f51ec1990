// The audit log: who changed what, newest first, and a line diff of before and after.
import { useEffect, useState } from 'preact/hooks';
import { request } from './api';
import { Page } from './ui';

/** A line diff (longest common subsequence): [' '|'-'|'+', line][]. */
export function diff(a: string[], b: string[]): [string, string][] {
  const n = a.length, m = b.length;
  const L = Array.from({ length: n + 1 }, () => new Array<number>(m + 1).fill(0));
  for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--)
    L[i][j] = a[i] === b[j] ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
  const out: [string, string][] = [];
  let i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] === b[j]) { out.push([' ', a[i]]); i++; j++; }
    else if (j < m && (i === n || L[i][j + 1] >= L[i + 1][j])) out.push(['+', b[j++]]);
    else out.push(['-', a[i++]]);
  }
  return out;
}

const text = (o: unknown) => (o === null || o === undefined ? [] : JSON.stringify(o, null, 2).split('\n'));

export function Audit() {
  const [items, setItems] = useState<any[]>([]);
  const [open, setOpen] = useState<number | null>(null);
  useEffect(() => { request('GET', '/api/v1/audit?limit=100').then((r) => r.status === 200 && setItems(r.data.items ?? r.data)); }, []);
  return (
    <Page title="Audit log">
      <table><thead><tr><th scope="col">When</th><th scope="col">Who</th><th scope="col">Action</th><th scope="col">Kind</th><th scope="col">Object</th><th scope="col">Changes</th></tr></thead>
        <tbody>{items.map((e) => (<>
          <tr data-testid="audit-row">
            <td>{e.at}</td><td>{e.who}</td><td>{e.action}</td><td>{e.kind}</td>
            <td>{(e.after ?? e.before)?.name ?? e.object_id}</td>
            <td><button type="button" class="secondary" aria-expanded={open === e.id} onClick={() => setOpen(open === e.id ? null : e.id)}>
              {open === e.id ? 'Hide diff' : 'Show diff'}</button></td>
          </tr>
          {open === e.id && <tr><td colSpan={6}>
            <pre class="diff" tabIndex={0} aria-label="Differences, before to after">{diff(text(e.before), text(e.after)).map(([k, l]) =>
              <span class={k === '+' ? 'add' : k === '-' ? 'del' : ''}>{k} {l}{'\n'}</span>)}</pre>
          </td></tr>}
        </>))}</tbody></table>
    </Page>
  );
}

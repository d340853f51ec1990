// Tokens (admins): create (the token is shown once, here), list, revoke.
import { useEffect, useState } from 'preact/hooks';
import { describe, errorOf, request } from './api';
import { Field, Page, Select, Status, placeError } from './ui';

export function Tokens() {
  const [items, setItems] = useState<any[]>([]);
  const [name, setName] = useState('');
  const [role, setRole] = useState('viewer');
  const [errs, setErrs] = useState<Record<string, string>>({});
  const [created, setCreated] = useState<string>('');
  const [msg, setMsg] = useState('');
  const load = async () => { const r = await request('GET', '/api/v1/tokens'); if (r.status === 200) setItems(r.data.items); };
  useEffect(() => { load(); }, []);
  const create = async (e: Event) => {
    e.preventDefault(); setErrs({}); setCreated('');
    const r = await request('POST', '/api/v1/tokens', { name: name.trim(), role });
    if (r.status === 201) { setCreated(r.data.token); setName(''); load(); return; }
    const pl = placeError(errorOf(r), ['name', 'role']); setErrs(pl.fields); setMsg(pl.top);
  };
  const revoke = async (t: any) => {
    if (!confirm(`Revoke token ${t.name}? Anyone using it is refused from now on.`)) return;
    const r = await request('DELETE', '/api/v1/tokens/' + encodeURIComponent(t.name));
    setMsg(r.status === 204 ? `Token ${t.name} revoked.` : describe(errorOf(r))); load();
  };
  return (
    <Page title="Tokens">
      {msg && <Status msg={msg} />}
      <form onSubmit={create} class="inline" noValidate>
        <Field path="name" label="Token name" value={name} required errors={errs} onInput={setName} />
        <Select path="role" label="Role" value={role} errors={errs} options={[['viewer', 'viewer (read only)'], ['admin', 'admin']]} onChange={setRole} />
        <button type="submit">Create token</button>
      </form>
      {created && <div class="once" role="status">
        <label for="new-token">New token — copy it now, it is not shown again:</label>
        <input id="new-token" readOnly value={created} data-testid="new-token" onFocus={(e) => (e.target as HTMLInputElement).select()} />
      </div>}
      <table><thead><tr><th scope="col">Name</th><th scope="col">Role</th><th scope="col">Created</th><th scope="col">Revoked</th><th scope="col">Actions</th></tr></thead>
        <tbody>{items.map((t) => (
          <tr><th scope="row">{t.name}</th><td>{t.role}</td><td>{t.created_at}</td><td>{t.revoked_at ?? '–'}</td>
            <td>{!t.revoked_at && <button type="button" class="danger" aria-label={`Revoke ${t.name}`} onClick={() => revoke(t)}>Revoke</button>}</td></tr>
        ))}</tbody></table>
    </Page>
  );
}

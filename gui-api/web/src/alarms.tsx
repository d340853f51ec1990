// Alarms: active ones (filter by severity, acknowledge) and the history of cleared ones.
import { useEffect, useState } from 'preact/hooks';
import { describe, errorOf, request } from './api';
import { Page, Select, Status } from './ui';

export function Alarms(p: { admin: boolean }) {
  const [state, setState] = useState('active');
  const [sev, setSev] = useState('');
  const [items, setItems] = useState<any[]>([]);
  const [msg, setMsg] = useState('');
  const load = async () => {
    const q = new URLSearchParams({ state, limit: '200' });
    if (sev) q.set('severity', sev);
    const r = await request('GET', '/api/v1/alarms?' + q);
    if (r.status === 200) setItems(r.data.items ?? r.data);
    else setMsg(describe(errorOf(r)));
  };
  useEffect(() => { load(); const t = setInterval(load, 3000); return () => clearInterval(t); }, [state, sev]);
  const ack = async (a: any) => {
    const r = await request('POST', `/api/v1/alarms/${a.id}/ack`);
    setMsg(r.status === 200 ? `Alarm ${a.type} on ${a.resource} acknowledged.` : describe(errorOf(r)));
    load();
  };
  return (
    <Page title="Alarms">
      {msg && <Status msg={msg} />}
      <div class="filters">
        <Select path="alarm-state" label="Show" value={state} errors={{}} options={[['active', 'Active'], ['cleared', 'History (cleared)']]} onChange={setState} />
        <Select path="alarm-severity" label="Severity" value={sev} errors={{}}
                options={[['', 'All'], ['critical', 'critical'], ['major', 'major'], ['minor', 'minor'], ['warning', 'warning']]} onChange={setSev} />
      </div>
      {!items.length && <p class="empty">{state === 'active' ? 'No active alarm' + (sev ? ` of severity ${sev}` : '') + '. One is raised when a worker stops reporting, an endpoint goes down, dead letters surge or a feed falls behind.' : 'No cleared alarm yet.'}</p>}
      {items.length > 0 && <table><thead><tr><th scope="col">Type</th><th scope="col">Resource</th><th scope="col">Severity</th><th scope="col">Text</th>
        <th scope="col">Raised</th><th scope="col">Count</th><th scope="col">Acknowledged</th><th scope="col">Cleared</th>{p.admin && <th scope="col">Actions</th>}</tr></thead>
        <tbody>{items.map((a) => (
          <tr data-testid={'alarm-' + a.type}>
            <th scope="row">{a.type}</th><td>{a.resource}</td><td class={'sev ' + a.severity}>{a.severity}</td><td>{a.text}</td>
            <td>{a.raised_at}</td><td>{a.count}</td><td>{a.acked_by ? `${a.acked_by} at ${a.acked_at}` : 'no'}</td><td>{a.cleared_at ?? '–'}</td>
            {p.admin && <td>{!a.acked_by && a.state === 'active' && <button type="button" onClick={() => ack(a)} aria-label={`Acknowledge ${a.type} ${a.resource}`}>Acknowledge</button>}</td>}
          </tr>
        ))}</tbody></table>}
    </Page>
  );
}

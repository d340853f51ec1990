// Dead letters: the DLQ topics with their record counts, then the last N records of one
// (GET /api/v1/deadletters): why each copy was refused, by whom, where it came from, and for
// admins the start of its body — "why does my vendor get nothing?" answered in the console.
import { useEffect, useState } from 'preact/hooks';
import { describe, errorOf, request } from './api';
import { Page, Select, Status } from './ui';

function original(o: any): string {
  return o && o.topic !== undefined ? `${o.topic} [${o.partition}] @ ${o.offset}` : '–';
}

function Records(p: { topic: string; admin: boolean }) {
  const [limit, setLimit] = useState('20');
  const [items, setItems] = useState<any[] | null>(null);
  const [err, setErr] = useState('');
  useEffect(() => {
    setItems(null); setErr('');
    const q = new URLSearchParams({ topic: p.topic, limit });
    request('GET', '/api/v1/deadletters?' + q).then((r) => {
      if (r.status === 200) setItems(r.data.items ?? []); else setErr(describe(errorOf(r)));
    });
  }, [p.topic, limit]);
  return (
    <section aria-labelledby="dl-records">
      <h2 id="dl-records">Last records of {p.topic}</h2>
      <div class="filters">
        <Select path="dl-limit" label="Records shown (newest first)" value={limit} errors={{}}
                options={['10', '20', '50', '100'].map((n) => [n, n] as [string, string])} onChange={setLimit} />
      </div>
      {err && <Status kind="error" msg={err} />}
      {items === null && !err && <p>Loading…</p>}
      {items && !items.length && <p class="empty">No record in {p.topic}: nothing was refused, or its records expired.</p>}
      {items && items.length > 0 && <table data-testid="dl-records">
        <thead><tr><th scope="col">When</th><th scope="col">Partition @ offset</th><th scope="col">Source</th>
          <th scope="col">Reason</th><th scope="col">Field</th><th scope="col">Original</th><th scope="col">Body</th></tr></thead>
        <tbody>{items.map((x) => (
          <tr data-testid="dl-record">
            <td>{x.timestamp ?? '–'}</td><td>{x.partition} @ {x.offset}</td><td>{x.source ?? '–'}</td>
            <td class="reason">{x.reason ?? '–'}</td><td>{x.field ? <code>{x.field}</code> : '–'}</td><td>{original(x.original)}</td>
            <td>{x.body !== undefined
              ? <><small>{x.body_bytes ?? '?'} bytes{x.body_bytes > x.body.length ? ', first ' + x.body.length + ' shown' : ''}</small>
                  <pre class="body" tabIndex={0} role="region" aria-label={`Body of the record at offset ${x.offset}`}>{x.body}</pre></>
              : <small>{x.body_bytes ?? '?'} bytes{p.admin ? '' : ' (bodies are shown to admins)'}</small>}</td>
          </tr>
        ))}</tbody>
      </table>}
    </section>
  );
}

export function DeadLetters(p: { admin: boolean }) {
  const [topics, setTopics] = useState<any[] | null>(null);
  const [open, setOpen] = useState<string | null>(null);
  const [err, setErr] = useState('');
  useEffect(() => {
    request('GET', '/api/v1/deadletters').then((r) => {
      if (r.status === 200) setTopics(r.data.topics ?? []); else setErr(describe(errorOf(r)));
    });
  }, []);
  return (
    <Page title="Dead letters">
      <p class="hint">A copy a feed or a worker cannot deliver or read goes to its dead-letter topic (ndd.dlq.*) with the reason.</p>
      {err && <Status kind="error" msg={err} />}
      {topics && !topics.length && <p class="empty" data-testid="dl-empty">No dead-letter topic on the cluster yet: nothing has been refused.</p>}
      {topics && topics.length > 0 && <table data-testid="dl-topics">
        <thead><tr><th scope="col">Topic</th><th scope="col">Records</th><th scope="col">Actions</th></tr></thead>
        <tbody>{topics.map((t) => (
          <tr><th scope="row">{t.topic}</th><td class="num">{t.records ?? <span title={t.error}>unknown: {t.error}</span>}</td>
            <td><button type="button" class="secondary" aria-pressed={open === t.topic} aria-label={`${open === t.topic ? 'Hide' : 'Show records'} of ${t.topic}`}
                        onClick={() => setOpen(open === t.topic ? null : t.topic)}>{open === t.topic ? 'Hide' : 'Show records'}</button></td></tr>
        ))}</tbody>
      </table>}
      {open && <Records topic={open} admin={p.admin} />}
    </Page>
  );
}

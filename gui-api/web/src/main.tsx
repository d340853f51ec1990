// The console's shell: login, the navigation, and hash routes (#/feeds): the server serves
// one index.html, and no route needs a server round trip.
import { render } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { login, logout, session } from './api';
import type { Session } from './api';
import { Overview } from './overview';
import { Feeds } from './feeds';
import { Filters } from './filters';
import { Collection, SOURCE_FIELDS, CORRELATION_FIELDS, AGGREGATION_RUNNING, CORRELATION_RUNNING } from './collection';
import { DeadLetters } from './deadletters';
import { Alarms } from './alarms';
import { Audit } from './audit';
import { Tokens } from './tokens';
import { Status } from './ui';
import 'uplot/dist/uPlot.min.css';
import './style.css';

const ROUTES: [string, string][] = [
  ['overview', 'Overview'], ['feeds', 'Feeds'], ['filters', 'Filters'], ['sources', 'Sources'],
  ['correlation', 'Correlation'], ['deadletters', 'Dead letters'], ['alarms', 'Alarms'], ['audit', 'Audit log'], ['tokens', 'Tokens'],
];

function route(): string {
  const r = location.hash.replace(/^#\/?/, '').split('/')[0];
  return ROUTES.some(([k]) => k === r) ? r : 'overview';
}

function Login(p: { onLogin: (s: Session) => void }) {
  const [token, setToken] = useState('');
  const [err, setErr] = useState('');
  const submit = async (e: Event) => {
    e.preventDefault();
    const r = await login(token.trim());
    setToken('');
    if ('csrf' in r) p.onLogin(r);
    else setErr(r.reason || r.error);
  };
  return (
    <main id="main" class="login">
      <h1>NDD console</h1>
      <form onSubmit={submit}>
        <label for="token">API token</label>
        <input id="token" type="password" autocomplete="off" value={token} required
               aria-describedby="token-hint"
               onInput={(e) => setToken((e.target as HTMLInputElement).value)} />
        <small id="token-hint" class="hint">
          From <code>ndd-admin token create --role admin|viewer --name NAME</code>; it is
          exchanged for a session cookie and not kept by the browser.
        </small>
        <button type="submit">Log in</button>
        {err && <Status kind="error" msg={err} />}
      </form>
    </main>
  );
}

function App() {
  const [s, setS] = useState<Session | null | undefined>(undefined);
  const [r, setR] = useState(route());
  useEffect(() => {
    session().then(setS);
    const f = () => setR(route());
    addEventListener('hashchange', f);
    return () => removeEventListener('hashchange', f);
  }, []);
  useEffect(() => { document.title = `NDD console: ${ROUTES.find(([k]) => k === r)?.[1]}`; }, [r]);
  if (s === undefined) return <main id="main"><p>Loading…</p></main>;
  if (s === null) return <Login onLogin={setS} />;
  const admin = s.role === 'admin';
  const routes = ROUTES.filter(([k]) => k !== 'tokens' || admin);
  return (
    <div class="shell">
      <a class="skip" href="#main">Skip to content</a>
      <header>
        <span class="brand">NDD</span>
        <nav aria-label="Main">
          <ul>
            {routes.map(([k, t]) => (
              <li><a href={'#/' + k} aria-current={k === r ? 'page' : undefined}>{t}</a></li>
            ))}
          </ul>
        </nav>
        <span class="who" data-testid="who">{s.name} ({s.role})</span>
        <button type="button" onClick={async () => { await logout(); setS(null); }}>Log out</button>
      </header>
      <main id="main" tabIndex={-1}>
        {r === 'overview' && <Overview />}
        {r === 'feeds' && <Feeds admin={admin} />}
        {r === 'filters' && <Filters admin={admin} />}
        {r === 'sources' && <Collection admin={admin} coll="sources" title="Sources" fields={SOURCE_FIELDS} running={AGGREGATION_RUNNING}
          empty={'No source in the admin yet. A source describes an NF type\'s ingest topic (type, topic, partitions, retention): create one with “New” or ndd-admin apply.'} />}
        {r === 'correlation' && <Collection admin={admin} coll="correlation" title="Correlation settings" fields={CORRELATION_FIELDS} running={CORRELATION_RUNNING}
          empty={'No correlation settings in the admin yet: running correlation workers use their own (timeout 5000 ms by default). Create them with “New” or ndd-admin apply.'} />}
        {r === 'deadletters' && <DeadLetters admin={admin} />}
        {r === 'alarms' && <Alarms admin={admin} />}
        {r === 'audit' && <Audit />}
        {r === 'tokens' && admin && <Tokens />}
      </main>
    </div>
  );
}

render(<App />, document.getElementById('app')!);

// The console's browser scenarios, run by tests/e2e/test_console_browser.sh against a real
// stack. playwright-core drives Debian's chromium; axe-core checks every page. Each step
// prints "ok - ..." or throws (exit 1). Expected refusals the scenarios provoke (422, 412,
// 403) are the only console messages allowed, and only as Chrome's "Failed to load
// resource" lines for those statuses; anything else fails the run. The scenarios that need
// only a console URL and a token are in feeds.mjs and lib.mjs, for other stacks to reuse.
import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Watch, api, assert, axeCheck, login as loginAt, ok, openBrowser, until, visit as visitAt } from './lib.mjs';
import { deadLetterShows, editOneField, formMatchesSchema } from './feeds.mjs';

const env = (k) => { if (!process.env[k]) throw new Error(`${k} not set`); return process.env[k]; };
const URL0 = env('CONSOLE_URL'), SHOTS = env('SHOTS_DIR');
const FEED = 'console-feed';
const TAG = env('TAG');

let sink = null;
function startSink() {
  sink = spawn(env('SINK_BIN'), ['--h2-port', env('SINK_PORT'), '--metrics-port', env('SINK_CTL_PORT')], { stdio: 'ignore' });
}
function stopSink() { if (sink) { sink.kill('SIGTERM'); sink = null; } }
async function sinkControl(doc) {
  for (let i = 0; ; i++) {
    try {
      const r = await fetch(`http://127.0.0.1:${env('SINK_CTL_PORT')}/control`, { method: 'POST', body: JSON.stringify(doc) });
      if (r.ok) return;
      throw new Error(`sink /control answered ${r.status}`);
    } catch (e) { if (i > 30) throw e; await new Promise((f) => setTimeout(f, 200)); }
  }
}

const { browser, close } = await openBrowser();
const watch = new Watch();
const newPage = () => watch.newPage(browser);
const visit = (page, route, name, shot = true) => visitAt(page, URL0, route, name, shot ? SHOTS : null);
const login = (page, token) => loginAt(page, URL0, token);

mkdirSync(SHOTS, { recursive: true });
let exit = 0;
let page = null;
try {
  startSink();
  // ---- a viewer: no write buttons; a forced write is refused by the admin --------------------
  page = await newPage();
  await page.goto(URL0 + '/');
  await page.locator('#token').waitFor();
  await axeCheck(page, 'login');
  await page.screenshot({ path: join(SHOTS, 'login.png') });
  await login(page, env('VIEWER_TOKEN'));
  ok('viewer logged in; CSP present; cookie HttpOnly SameSite=Strict; no token in storage');
  await page.goto(URL0 + '/#/feeds');
  await page.locator('#page-title').waitFor();
  assert(await page.locator('[data-testid=new-feed]').count() === 0, 'viewer sees "New feed"');
  assert(await page.locator('nav >> text=Tokens').count() === 0, 'viewer sees Tokens');
  watch.allowed = new Set([403]);
  const forced = await page.evaluate(async () => {
    const s = await (await fetch('/console/session')).json();
    const r = await fetch('/api/v1/feeds', { method: 'POST', headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': s.csrf },
      body: JSON.stringify({ name: 'forced', endpoints: [{ url: 'http://127.0.0.1:1/x' }] }) });
    return r.status;
  });
  assert(forced === 403, `viewer's forced write answered ${forced}`);
  const nocsrf = await page.evaluate(async () => (await fetch('/api/v1/feeds', { method: 'POST', body: '{}' })).status);
  assert(nocsrf === 403, `write without CSRF token answered ${nocsrf}`);
  ok('viewer: no write buttons; forced write 403 (admin); write without CSRF token 403');
  await page.context().close();

  // ---- an admin ----------------------------------------------------------------------------
  page = await newPage();
  watch.allowed = new Set();
  await login(page, env('ADMIN_TOKEN'));
  ok('admin logged in');
  // a filter, and the test box
  await visit(page, 'filters', 'filters', false);
  await page.click('text=New filter');
  await page.fill('#f-name', 'scp-only');
  await page.selectOption('#f-default', 'drop');
  await page.click('text=Add rule');
  await page.click('[data-testid=filter-test]');
  await page.locator('[data-testid=filter-result]').waitFor();
  const res = await page.locator('[data-testid=filter-result]').textContent();
  assert(/^ALLOW/.test(res), `filter test box said "${res}"`);
  await axeCheck(page, 'filter editor');
  await page.screenshot({ path: join(SHOTS, 'filters.png') });
  await page.click('text=Create filter');
  await page.locator('th:has-text("scp-only")').waitFor();
  ok(`filter editor: test box says "${res}"; filter created`);

  // the form is drawn from the admin's schema: every transport and encoding, nothing else
  await visit(page, 'feeds', 'feeds-empty', false);
  assert(await page.locator('[data-testid=feeds-empty]').count() === 1, 'no empty-state text on an empty Feeds page');
  // a feed an adapter runs from its feeds file: listed, read-only, with where it comes from
  const fromFile = page.locator(`[data-testid=origin-${TAG}-fromfile]`);
  const origin = await until(page, 15000, `${TAG}-fromfile listed from the feeds file`, async () =>
    (await fromFile.count()) ? fromFile.textContent() : '');
  assert(/read-only/.test(origin) && /console-file-adapter/.test(origin), `origin label "${origin}"`);
  assert(await page.locator(`button[aria-label="Edit ${TAG}-fromfile"]`).count() === 0, 'a feeds-file feed has an Edit button');
  ok(`feeds list: ${TAG}-fromfile "${origin}", no Edit or Delete`);
  await formMatchesSchema(page, URL0);

  // the feed form: an invalid endpoint first, then a valid one
  await page.click('[data-testid=new-feed]');
  await page.fill('#f-name', FEED);
  await page.fill('#f-source_topic', env('MAIN_TOPIC'));
  await page.fill('#f-dlq_topic', env('DLQ_TOPIC'));
  await page.fill('#f-endpoints_0__url', 'http://127.0.0.1:99999/ingest');
  watch.allowed = new Set([422]);
  await page.click('text=Create feed');
  const err = page.locator('#f-endpoints_0__url-err');
  await err.waitFor();
  const errText = await err.textContent();
  assert(/port/i.test(errText), `error next to the endpoint: "${errText}"`);
  await axeCheck(page, 'feed form with error');
  await page.screenshot({ path: join(SHOTS, 'feed-form-error.png'), fullPage: true });
  ok(`invalid endpoint: "${errText}" shown next to the field`);
  await page.fill('#f-endpoints_0__url', `http://127.0.0.1:${env('SINK_PORT')}/ingest`);
  await page.click('text=Create feed');
  await page.locator(`[data-testid=feed-${FEED}]`).waitFor();
  ok('valid feed created through the form (POST)');

  // the overview shows its egress rate above zero within 10 s, and its lag
  await page.goto(URL0 + '/#/overview');
  const t0 = Date.now();
  const rate = page.locator(`[data-testid=rate-${FEED}]`);
  const seen = await until(page, 25000, `egress rate of ${FEED}`, async () => {
    const v = parseFloat((await rate.count()) ? await rate.textContent() : '');
    return v > 0 ? v : 0;
  });
  ok(`overview: ${FEED} egress ${seen} copies/s, ${((Date.now() - t0) / 1000).toFixed(1)} s after creation`);
  const lag = page.locator(`[data-testid=lag-${FEED}]`);
  const lagText = await until(page, 15000, `lag of ${FEED} on the overview`, async () => {
    const t = (await lag.count()) ? await lag.textContent() : '';
    return /^\d/.test(t) ? t : '';
  });
  const health = page.locator(`[data-testid=health-${FEED}]`);
  const h = await until(page, 15000, `health of ${FEED} on the overview`, async () => {
    const t = (await health.count()) ? await health.textContent() : '';
    return t && t !== 'no heartbeat yet' ? t : '';
  });
  ok(`overview: ${FEED} lag "${lagText}", health "${h}"`);
  await page.waitForTimeout(2500);
  await axeCheck(page, 'overview');
  await page.screenshot({ path: join(SHOTS, 'overview.png'), fullPage: true });
  // the charts follow the window: at 700 px one chart a row, each as wide as its box
  const widths = () => page.locator('.chart').first().evaluate((f) => [f.getBoundingClientRect().width, f.querySelector('canvas').getBoundingClientRect().width]);
  const [, w0] = await widths();
  await page.setViewportSize({ width: 700, height: 860 });
  const w1 = await until(page, 5000, 'a chart as wide as its box after the window changed', async () => {
    const [box, c] = await widths();
    return Math.abs(c - w0) > 50 && box - c < 30 ? c : 0;
  });
  await page.setViewportSize({ width: 1366, height: 860 });
  ok(`overview: axe clean, screenshot; a chart ${Math.round(w0)} px wide follows the window to ${Math.round(w1)} px`);

  // edit the feed (a merge patch of the one member); then a stale edit gets the 412 message
  await visit(page, 'feeds', 'feeds-list', false);
  await page.click(`button[aria-label="Edit ${FEED}"]`);
  await page.locator('#f-endpoints_0__weight').waitFor();
  await page.waitForFunction(() => document.querySelector('#f-name')?.value !== '');
  await page.fill('#f-endpoints_0__weight', '2');
  await page.click('text=Save changes');
  await page.locator(`text=Feed ${FEED} saved (version 2)`).waitFor();
  ok('feed edited (weight 2, version 2)');
  await page.click(`button[aria-label="Edit ${FEED}"]`);
  await page.waitForFunction(() => document.querySelector('#f-name')?.value !== '');
  const list = await api(page, 'GET', '/api/v1/feeds?name=' + FEED);
  const id = list.data.items[0].id;
  const cur = await api(page, 'GET', '/api/v1/feeds/' + id);
  const other = await api(page, 'PATCH', '/api/v1/feeds/' + id, { delivery: { max_in_flight: 64 } }, { 'If-Match': cur.etag });
  assert(other.status === 200, `concurrent PATCH answered ${other.status}`);
  watch.allowed = new Set([412]);
  await page.fill('#f-endpoints_0__weight', '3');
  await page.click('text=Save changes');
  await page.locator('text=412 Precondition Failed').waitFor();
  await page.screenshot({ path: join(SHOTS, 'feed-form-412.png') });
  ok('stale edit: the 412 message shows');
  await page.click('text=Cancel');

  // dead letters: the sink refuses three requests with 400, the adapter dead-letters them
  await sinkControl({ status: 400, count: 3 });
  await deadLetterShows(page, URL0, env('DLQ_TOPIC'), { shots: SHOTS, reason: /HTTP 400/ });

  // the Feeds list: the feed's rate per second from /status, health, endpoint state
  await page.goto(URL0 + '/#/overview');
  await page.locator('#page-title:has-text("Overview")').waitFor();
  await page.goto(URL0 + '/#/feeds');
  const listRate = page.locator(`[data-testid=list-rate-${FEED}]`);
  const lr = await until(page, 20000, `rate of ${FEED} in the Feeds list`, async () => {
    const v = parseFloat((await listRate.count()) ? await listRate.textContent() : '');
    return v > 0 ? v : 0;
  });
  await page.screenshot({ path: join(SHOTS, 'feeds.png') });
  ok(`feeds list: ${FEED} at ${lr} copies/s with its lag, latency, dead letters and endpoint state`);

  // stop the sink: the endpoint-down alarm appears; acknowledge it
  const before = await api(page, 'GET', '/api/v1/alarms?state=active&type=endpoint-down');
  assert((before.data.items ?? before.data).length === 0, 'an endpoint-down alarm was active before the sink stopped');
  stopSink();
  await visit(page, 'alarms', 'alarms-empty', false);
  const alarm = page.locator('[data-testid=alarm-endpoint-down]');
  await alarm.first().waitFor({ timeout: 45000 });
  ok('sink stopped: endpoint-down alarm listed');
  await page.click('button[aria-label^="Acknowledge endpoint-down"]');
  await page.locator('[data-testid=alarm-endpoint-down] >> text=console-admin at').waitFor();
  await axeCheck(page, 'alarms');
  await page.screenshot({ path: join(SHOTS, 'alarms.png') });
  ok('alarm acknowledged (acked by console-admin)');

  // the sink back: delivery resumes; delete the feed: its rate stops
  startSink();
  await page.goto(URL0 + '/#/overview');
  await until(page, 30000, 'rate after the sink came back', async () =>
    parseFloat((await rate.count()) ? await rate.textContent() : '') > 0);
  await page.goto(URL0 + '/#/feeds');
  await page.click(`button[aria-label="Delete ${FEED}"]`);
  await page.locator(`text=Feed ${FEED} deleted.`).waitFor();
  await page.goto(URL0 + '/#/overview');
  await until(page, 20000, 'rate stopped after delete', async () => {
    const n = await rate.count();
    return !(n && parseFloat(await rate.textContent()) > 0);
  });
  ok('feed deleted: its rate stopped');

  // one field of a kafka, a file and a synthetic-encoding feed, edited through the form: the
  // stored object differs only there. Each carries settings the form must keep (an inline
  // filter that drops every copy, so none of them sends anything; kafka.config; file.prefix).
  const drop = { name: 'drop-all', default: 'drop', rules: [] };
  watch.allowed = new Set([422]);
  const kafkaUrl = `kafka://${env('KAFKA_BOOTSTRAP')}/ndd-${TAG}-kout`;
  const fileUrl = `file://${env('EXPORT_DIR')}`;
  await editOneField(page, URL0, {
    feed: { name: `${TAG}-kafka`, source_topic: env('MAIN_TOPIC'), transport: 'kafka', encoding: 'frame', filter: drop,
      endpoints: [{ url: kafkaUrl }], kafka: { config: { 'client.id': 'console-test' } }, delivery: { timeout_ms: 7000 } },
    path: 'kafka.exactly_once', input: 'select', text: 'false', want: false,
  });
  await editOneField(page, URL0, {
    feed: { name: `${TAG}-file`, source_topic: env('MAIN_TOPIC'), transport: 'file', encoding: 'json', filter: drop,
      endpoints: [{ url: fileUrl + '/json' }], file: { prefix: 'copies', max_bytes: 1048576 } },
    path: 'file.max_bytes', input: 'fill', text: '2097152', want: 2097152, bad: { text: '0', re: /max_bytes|range|1/ },
  });
  await editOneField(page, URL0, {
    feed: { name: `${TAG}-synthetic`, source_topic: env('MAIN_TOPIC'), transport: 'file', encoding: 'synthetic', filter: drop,
      endpoints: [{ url: fileUrl + '/pcap' }], synthetic: { max_connections: 100, mapping: [{ fqdn: 'udm.example', addr: '10.0.0.7:8080' }] } },
    path: 'synthetic.mss', input: 'fill', text: '1400', want: 1400, shot: join(SHOTS, 'feed-form-synthetic.png'),
  });
  // a value cleared in the form: the PATCH deletes that member only (null), nothing else
  await editOneField(page, URL0, {
    feed: { name: `${TAG}-clear`, source_topic: env('MAIN_TOPIC'), transport: 'file', encoding: 'xdr-jsonl', filter: drop,
      endpoints: [{ url: fileUrl + '/xdr' }], file: { max_seconds: 30, max_records: 1000 } },
    path: 'file.max_seconds', input: 'fill', text: '', want: null,
  });
  for (const n of ['kafka', 'file', 'synthetic', 'clear']) {
    const l = await api(page, 'GET', `/api/v1/feeds?name=${TAG}-${n}`);
    const d = await api(page, 'DELETE', '/api/v1/feeds/' + l.data.items[0].id);
    assert(d.status === 204, `delete ${TAG}-${n}: ${d.status}`);
  }

  // sources, correlation (what runs beside the admin's objects), tokens
  await visit(page, 'sources', 'sources');
  const running = await until(page, 15000, 'the SCP aggregation worker on the Sources page', async () => {
    await page.goto(URL0 + '/#/sources');
    await page.locator('#page-title').waitFor();
    await page.waitForLoadState('networkidle').catch(() => {});
    const t = await page.locator('[data-testid=running]').textContent().catch(() => '');
    return /SCP/.test(t) ? t : '';
  });
  assert(await page.locator('[data-testid=admin-empty]').count() === 1, 'no empty-state text for the admin\'s sources');
  await page.screenshot({ path: join(SHOTS, 'sources.png'), fullPage: true });
  ok(`sources: the running SCP aggregation listed (${running.slice(0, 80)}…), the admin's empty list explained`);
  await visit(page, 'correlation', 'correlation');
  assert(await page.locator('[data-testid=running-empty]').count() === 1, 'no empty-state text for the correlation workers');
  // correlation settings: created in their form, one value edited: a PATCH of that member
  await page.click('text=New');
  await page.fill('#f-name', `${TAG}-corr`);
  await page.fill('#f-timeout_ms', '4000');
  await page.click('text=Save');
  const editCorr = page.locator('tr', { hasText: `${TAG}-corr` }).locator('text=Edit');
  await editCorr.click();
  await page.waitForFunction(() => document.querySelector('#f-timeout_ms')?.value === '4000');
  await page.fill('#f-timeout_ms', '4500');
  const corrReq = page.waitForRequest((r) => r.method() === 'PATCH' && r.url().includes('/api/v1/correlation/'));
  await page.click('text=Save');
  const cr = await corrReq;
  assert(cr.postData() === '{"timeout_ms":4500}' && cr.headers()['if-match'], `correlation edit sent ${cr.method()} ${cr.postData()}`);
  await page.locator('td:text-is("4500")').waitFor();
  const corr = await api(page, 'GET', `/api/v1/correlation?name=${TAG}-corr`);
  assert(corr.data.items[0].timeout_ms === 4500 && corr.data.items[0].version === 2, `stored correlation ${JSON.stringify(corr.data.items[0])}`);
  ok(`correlation settings: created in the form, edited with PATCH ${cr.postData()} (version 2)`);
  await visit(page, 'tokens', 'tokens', false);
  await page.fill('#f-name', 'console-made');
  await page.click('text=Create token');
  const tok = await page.locator('[data-testid=new-token]').inputValue();
  assert(/^ndd_[0-9a-f]{16}_[0-9a-f]{64}$/.test(tok), 'new token shown');
  await page.screenshot({ path: join(SHOTS, 'tokens.png') });
  await page.click('button[aria-label="Revoke console-made"]');
  await page.locator('text=Token console-made revoked.').waitFor();
  await page.goto(URL0 + '/#/overview');
  await page.locator('#page-title:has-text("Overview")').waitFor();
  await page.goto(URL0 + '/#/tokens');
  await page.locator('#page-title:has-text("Tokens")').waitFor();
  assert(await page.locator('[data-testid=new-token]').count() === 0, 'token shown again');
  ok('tokens: created (shown once), revoked');

  // the audit page: the feed's changes, the token's and the alarm's; the diff in order
  await visit(page, 'audit', 'audit', false);
  const rows = await page.locator('[data-testid=audit-row]').allTextContents();
  for (const a of ['create', 'patch', 'delete'])
    assert(rows.some((r) => r.includes(FEED) && r.includes(a)), `audit has no ${a} of ${FEED}: ${rows.join(' | ')}`);
  assert(rows.some((r) => r.includes('console-made') && /token/.test(r)), `audit has no token row: ${rows.slice(0, 8).join(' | ')}`);
  assert(rows.some((r) => /alarm/.test(r) && /endpoint-down/.test(r)), `audit has no alarm row: ${rows.slice(0, 8).join(' | ')}`);
  const patchRow = page.locator('[data-testid=audit-row]', { hasText: `${TAG}-file` }).filter({ hasText: 'patch' }).first();
  await patchRow.locator('text=Show diff').click();
  const lines = await page.locator('pre.diff span').allTextContents();
  const changed = lines.filter((l) => /^[-+]/.test(l));
  assert(changed.length >= 2 && changed[0].startsWith('-') && changed[1].startsWith('+'), `diff not "-" before "+": ${changed.join('')}`);
  assert(!lines.some((l) => /"(version|updated_at|created_at)"/.test(l)), `diff shows bookkeeping: ${lines.join('')}`);
  await axeCheck(page, 'audit diff');
  await page.screenshot({ path: join(SHOTS, 'audit.png'), fullPage: true });
  ok(`audit: create, patch, delete of the feed, the token's and the alarm's rows; diff ${changed.map((l) => l.trim()).join(' ')}`);

  // keyboard: the navigation is reachable with Tab and works with Enter
  await page.goto(URL0 + '/#/overview');
  await page.locator('#page-title').waitFor();
  let reached = false;
  for (let i = 0; i < 15 && !reached; i++) {
    await page.keyboard.press('Tab');
    reached = await page.evaluate(() => document.activeElement?.textContent === 'Alarms');
  }
  assert(reached, 'Alarms link not reachable by Tab');
  await page.keyboard.press('Enter');
  await page.locator('#page-title:has-text("Alarms")').waitFor();
  ok('keyboard: navigation by Tab and Enter');

  // a viewer sees the dead letters' reasons and sizes, not their bodies
  const viewer = await newPage();
  await login(viewer, env('VIEWER_TOKEN'));
  await viewer.goto(URL0 + '/#/deadletters');
  await viewer.locator(`button[aria-label="Show records of ${env('DLQ_TOPIC')}"]`).click();
  const vrec = viewer.locator('[data-testid=dl-record]').first();
  await vrec.waitFor();
  const vt = await vrec.textContent();
  assert(/HTTP 400/.test(vt) && /bodies are shown to admins/.test(vt) && await viewer.locator('pre.body').count() === 0,
    `viewer's dead letter: "${vt}"`);
  await viewer.context().close();
  ok('dead letters as a viewer: reason and size, no body');

  assert(watch.problems.length === 0, 'console errors or CSP violations:\n  ' + watch.problems.join('\n  '));
  ok('no console error and no CSP violation on any page');
} catch (e) {
  console.log(`not ok - ${e.message}`);
  await page?.screenshot({ path: join(SHOTS, 'failure.png'), fullPage: true }).catch(() => {});
  if (watch.problems.length) console.log('console: ' + watch.problems.join('\n  '));
  exit = 1;
} finally {
  stopSink();
  await close();
}
process.exit(exit);

// The console's browser scenarios (issue 15 "Done when"), run by tests/e2e/test_console_browser.sh
// against a real stack. playwright-core drives Debian's chromium; axe-core checks every page.
// Each step prints "ok - ..." or throws (exit 1). Expected refusals the scenarios provoke
// (422, 412, 403) are the only console messages allowed, and only as Chrome's
// "Failed to load resource" lines for those statuses; anything else fails the run.
import { chromium } from 'playwright-core';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, mkdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const env = (k) => { if (!process.env[k]) throw new Error(`${k} not set`); return process.env[k]; };
const URL0 = env('CONSOLE_URL'), ADMIN = env('ADMIN_URL'), SHOTS = env('SHOTS_DIR');
const FEED = 'console-feed';
const require = createRequire(import.meta.url);
const AXE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
const started = Date.now();
const ok = (m) => console.log(`ok - ${m} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
function assert(c, m) { if (!c) throw new Error(m); }

let sink = null;
function startSink() {
  sink = spawn(env('SINK_BIN'), ['--h2-port', env('SINK_PORT'), '--metrics-port', '-1'], { stdio: 'ignore' });
}
function stopSink() { if (sink) { sink.kill('SIGTERM'); sink = null; } }

async function adminApi(method, path, body, headers = {}) {
  const r = await fetch(ADMIN + path, { method, headers: { Authorization: `Bearer ${env('ADMIN_TOKEN')}`,
    'Content-Type': 'application/json', ...headers }, body: body ? JSON.stringify(body) : undefined });
  return { status: r.status, etag: r.headers.get('etag'), data: r.status === 204 ? null : await r.json() };
}

const profile = mkdtempSync(join(tmpdir(), 'ndd-console-chromium-'));
const browser = await chromium.launch({
  executablePath: '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  // playwright gives a non-persistent browser a fresh user-data-dir of its own (under TMPDIR)
  env: { ...process.env, TMPDIR: profile },
});
const problems = [];
let allowed = new Set();
async function newPage() {
  const ctx = await browser.newContext({ viewport: { width: 1366, height: 860 } });
  const page = await ctx.newPage();
  await page.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (e) =>
      console.error(`CSP violation: ${e.violatedDirective} ${e.blockedURI}`));
  });
  page.on('console', (m) => {
    if (m.type() !== 'error' && m.type() !== 'warning') return;
    const t = m.text();
    const st = /status of (\d{3})/.exec(t);
    if (m.type() === 'error' && st && t.startsWith('Failed to load resource') && allowed.has(Number(st[1]))) return;
    if (m.type() === 'warning' && !/Content Security Policy|CSP/.test(t)) return;
    problems.push(`${m.type()}: ${t}`);
  });
  page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
  page.on('dialog', (d) => d.accept());
  return page;
}

async function axeCheck(page, name) {
  await page.evaluate(AXE);
  const r = await page.evaluate(() => window.axe.run(document, { resultTypes: ['violations'] }));
  const bad = r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  assert(bad.length === 0, `axe on ${name}: ` + bad.map((v) => `${v.id} (${v.impact}): ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(', ')}`).join('; '));
}

async function visit(page, route, name, shot = true) {
  await page.goto(`${URL0}/#/${route}`);
  await page.locator('#page-title').waitFor();
  await page.waitForLoadState('networkidle').catch(() => {});
  await axeCheck(page, name);
  if (shot) await page.screenshot({ path: join(SHOTS, `${name}.png`) });
  ok(`${name}: loads, axe finds no serious or critical violation`);
}

async function login(page, token) {
  const r = await page.goto(URL0 + '/');
  const csp = r.headers()['content-security-policy'] || '';
  assert(/script-src 'self'/.test(csp) && /default-src 'self'/.test(csp) && !/unsafe-inline/.test(csp), `CSP header: "${csp}"`);
  await page.fill('#token', token);
  await page.click('button[type=submit]');
  await page.locator('[data-testid=who]').waitFor();
  const cookies = await page.context().cookies();
  const c = cookies.find((x) => x.name === 'ndd_session');
  assert(c && c.httpOnly && c.sameSite === 'Strict' && c.expires > Date.now() / 1000, 'session cookie HttpOnly, SameSite=Strict, with expiry');
  const stored = await page.evaluate(() => JSON.stringify({ ...localStorage }) + JSON.stringify({ ...sessionStorage }));
  assert(!stored.includes(token), 'token in web storage');
}

mkdirSync(SHOTS, { recursive: true });
let exit = 0;
try {
  startSink();
  // ---- a viewer: no write buttons; a forced write is refused by the admin --------------------
  let page = await newPage();
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
  allowed = new Set([403]);
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
  allowed = new Set();
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

  // the feed form: an invalid endpoint first, then a valid one
  await visit(page, 'feeds', 'feeds-list', false);
  await page.click('[data-testid=new-feed]');
  await page.fill('#f-name', FEED);
  await page.fill('#f-source_topic', env('MAIN_TOPIC'));
  await page.fill('#f-endpoints_0__url', 'http://127.0.0.1:99999/ingest');
  allowed = new Set([422]);
  await page.click('text=Create feed');
  const err = page.locator('#f-endpoints_0__url-err');
  await err.waitFor();
  const errText = await err.textContent();
  assert(/port/i.test(errText), `error next to the endpoint: "${errText}"`);
  await axeCheck(page, 'feed form with error');
  await page.screenshot({ path: join(SHOTS, 'feed-form-error.png') });
  ok(`invalid endpoint: "${errText}" shown next to the field`);
  await page.fill('#f-endpoints_0__url', `http://127.0.0.1:${env('SINK_PORT')}/ingest`);
  await page.click('text=Create feed');
  await page.locator(`[data-testid=feed-${FEED}]`).waitFor();
  ok('valid feed created through the form');

  // the overview shows its egress rate above zero within 10 s
  await page.goto(URL0 + '/#/overview');
  const t0 = Date.now();
  const rate = page.locator(`[data-testid=rate-${FEED}]`);
  let seen = 0;
  for (;;) {
    const t = (await rate.count()) ? await rate.textContent() : '';
    seen = parseFloat(t);
    if (seen > 0) break;
    assert(Date.now() - t0 < 10000 + 15000, `egress rate of ${FEED} still "${t}"`);
    await page.waitForTimeout(250);
  }
  const tRate = (Date.now() - t0) / 1000;
  ok(`overview: ${FEED} egress ${seen} copies/s, ${tRate.toFixed(1)} s after creation`);
  await page.waitForTimeout(2500);
  await axeCheck(page, 'overview');
  await page.screenshot({ path: join(SHOTS, 'overview.png') });
  ok('overview: axe clean, screenshot');

  // edit the feed; then a stale edit gets the 412 message
  await visit(page, 'feeds', 'feeds', true);
  await page.click(`button[aria-label="Edit ${FEED}"]`);
  await page.locator('#f-endpoints_0__weight').waitFor();
  await page.waitForFunction(() => document.querySelector('#f-name')?.value !== '');
  await page.fill('#f-endpoints_0__weight', '2');
  await page.click('text=Save changes');
  await page.locator(`[data-testid=feed-${FEED}] >> text=2`).first().waitFor();
  ok('feed edited (weight 2, version 2)');
  await page.click(`button[aria-label="Edit ${FEED}"]`);
  await page.waitForFunction(() => document.querySelector('#f-name')?.value !== '');
  const list = await adminApi('GET', '/api/v1/feeds?name=' + FEED);
  const id = list.data.items[0].id;
  const cur = await adminApi('GET', '/api/v1/feeds/' + id);
  const other = await adminApi('PATCH', '/api/v1/feeds/' + id, { delivery: { max_in_flight: 64 } }, { 'If-Match': cur.etag });
  assert(other.status === 200, `concurrent PATCH answered ${other.status}`);
  allowed = new Set([412]);
  await page.fill('#f-endpoints_0__weight', '3');
  await page.click('text=Save changes');
  await page.locator('text=412 Precondition Failed').waitFor();
  await page.screenshot({ path: join(SHOTS, 'feed-form-412.png') });
  ok('stale edit: the 412 message shows');
  await page.click('text=Cancel');

  // stop the sink: the endpoint-down alarm appears; acknowledge it
  const before = await adminApi('GET', '/api/v1/alarms?state=active&type=endpoint-down');
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
  for (const t1 = Date.now(); ; ) {
    const v = parseFloat((await rate.count()) ? await rate.textContent() : '');
    if (v > 0) break;
    assert(Date.now() - t1 < 30000, 'rate did not resume after the sink came back');
    await page.waitForTimeout(300);
  }
  await page.goto(URL0 + '/#/feeds');
  await page.click(`button[aria-label="Delete ${FEED}"]`);
  await page.locator(`text=Feed ${FEED} deleted.`).waitFor();
  await page.goto(URL0 + '/#/overview');
  for (const t2 = Date.now(); ; ) {
    const n = await rate.count();
    const v = n ? parseFloat(await rate.textContent()) : 0;
    if (!(v > 0)) break;
    assert(Date.now() - t2 < 20000, `rate still ${v} after delete`);
    await page.waitForTimeout(300);
  }
  ok('feed deleted: its rate stopped');

  // the audit page shows the changes, with a diff
  await visit(page, 'audit', 'audit', false);
  const rows = await page.locator('[data-testid=audit-row]').allTextContents();
  for (const a of ['create', 'replace', 'patch', 'delete'])
    assert(rows.some((r) => r.includes(FEED) && r.includes(a)), `audit has no ${a} of ${FEED}: ${rows.join(' | ')}`);
  await page.locator('[data-testid=audit-row] >> text=Show diff').nth(1).click();
  await page.locator('pre.diff .add').first().waitFor();
  await axeCheck(page, 'audit diff');
  await page.screenshot({ path: join(SHOTS, 'audit.png') });
  ok('audit: create, replace, patch, delete of the feed; diff view');

  // sources, correlation, tokens
  await visit(page, 'sources', 'sources');
  await visit(page, 'correlation', 'correlation');
  await visit(page, 'tokens', 'tokens', false);
  await page.fill('#f-name', 'console-made');
  await page.click('text=Create token');
  const tok = await page.locator('[data-testid=new-token]').inputValue();
  assert(/^ndd_[0-9a-f]{16}_[0-9a-f]{64}$/.test(tok), 'new token shown');
  await page.screenshot({ path: join(SHOTS, 'tokens.png') });
  await page.click('button[aria-label="Revoke console-made"]');
  await page.locator('text=Token console-made revoked.').waitFor();
  await page.goto(URL0 + '/#/overview');
  await page.goto(URL0 + '/#/tokens');
  assert(await page.locator('[data-testid=new-token]').count() === 0, 'token shown again');
  ok('tokens: created (shown once), revoked');

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

  assert(problems.length === 0, 'console errors or CSP violations:\n  ' + problems.join('\n  '));
  ok('no console error and no CSP violation on any page');
} catch (e) {
  console.log(`not ok - ${e.message}`);
  if (problems.length) console.log('console: ' + problems.join('\n  '));
  exit = 1;
} finally {
  stopSink();
  await browser.close();
  rmSync(profile, { recursive: true, force: true });
}
process.exit(exit);

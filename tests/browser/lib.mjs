// What every browser scenario of the console needs: Debian's chromium through playwright-core,
// pages that record console errors and CSP violations, axe-core, the login, and the admin's
// API called from the logged-in page (through ndd-gui-api, with the session and its CSRF
// token: a scenario needs only the console's URL and a token).
import { chromium } from 'playwright-core';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const require = createRequire(import.meta.url);
const AXE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
const started = Date.now();

export const ok = (m) => console.log(`ok - ${m} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
export function assert(c, m) { if (!c) throw new Error(m); }

/** A headless chromium with a fresh profile; close() also removes the profile. */
export async function openBrowser() {
  const profile = mkdtempSync(join(tmpdir(), 'ndd-console-chromium-'));
  const browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync'],
    // playwright gives a non-persistent browser a fresh user-data-dir of its own (under TMPDIR)
    env: { ...process.env, TMPDIR: profile },
  });
  const close = async () => { await browser.close(); rmSync(profile, { recursive: true, force: true }); };
  return { browser, close };
}

/** Console errors and CSP violations of every page: problems collects them; allowed holds
 * the HTTP statuses a step provokes on purpose (Chrome logs "Failed to load resource"). */
export class Watch {
  constructor() { this.problems = []; this.allowed = new Set(); }
  async newPage(browser) {
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
      if (m.type() === 'error' && st && t.startsWith('Failed to load resource') && this.allowed.has(Number(st[1]))) return;
      if (m.type() === 'warning' && !/Content Security Policy|CSP/.test(t)) return;
      const where = m.location()?.url;
      this.problems.push(`${m.type()}: ${t}${where ? ` (${where})` : ''}`);
    });
    page.on('pageerror', (e) => this.problems.push(`page error: ${e.message}`));
    page.on('dialog', (d) => d.accept());
    return page;
  }
}

export async function axeCheck(page, name) {
  await page.evaluate(AXE);
  const r = await page.evaluate(() => window.axe.run(document, { resultTypes: ['violations'] }));
  const bad = r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
  assert(bad.length === 0, `axe on ${name}: ` + bad.map((v) => `${v.id} (${v.impact}): ${v.nodes.slice(0, 3).map((n) => n.target.join(' ')).join(', ')}`).join('; '));
}

/** Opens a route, waits for its title, runs axe; a screenshot NAME.png into shots when given. */
export async function visit(page, url, route, name, shots) {
  await page.goto(`${url}/#/${route}`);
  await page.locator('#page-title').waitFor();
  await page.waitForLoadState('networkidle').catch(() => {});
  await axeCheck(page, name);
  if (shots) await page.screenshot({ path: join(shots, `${name}.png`), fullPage: true });
  ok(`${name}: loads, axe finds no serious or critical violation`);
}

export async function login(page, url, token) {
  const r = await page.goto(url + '/');
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

/** The admin's API from the logged-in page, through ndd-gui-api: {status, etag, data}. */
export async function api(page, method, path, body, headers = {}) {
  return page.evaluate(async ([m, p, b, h]) => {
    const s = await (await fetch('/console/session')).json();
    const r = await fetch(p, { method: m, headers: { 'Content-Type': 'application/json', 'X-CSRF-Token': s.csrf, ...h },
      body: b === null ? undefined : JSON.stringify(b) });
    const t = await r.text();
    let data = null;
    try { data = t ? JSON.parse(t) : null; } catch { data = t; }
    return { status: r.status, etag: r.headers.get('ETag'), data };
  }, [method, path, body === undefined ? null : body, headers]);
}

/** Polls fn until it returns a truthy value, at most ms; the last value otherwise throws. */
export async function until(page, ms, what, fn) {
  const t0 = Date.now();
  for (;;) {
    const v = await fn();
    if (v) return v;
    assert(Date.now() - t0 < ms, `${what}: not within ${ms / 1000} s`);
    await page.waitForTimeout(300);
  }
}

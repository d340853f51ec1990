// Feed scenarios any console can run, given its URL and a logged-in admin page:
//   formMatchesSchema: the form offers exactly the transports and, per transport, the
//     encodings the admin's GET /api/v1/schema/feeds lists, and draws each member's options;
//   editOneField: a feed created through the API, one field edited in the form, and the
//     stored object before and after differs only in that field (and version, updated_at);
//   deadLetterShows: the Dead letters page lists a topic and shows one of its records.
import { join } from 'node:path';
import { api, assert, axeCheck, ok, until } from './lib.mjs';

const fid = (path) => '#f-' + path.replace(/[^A-Za-z0-9_-]/g, '_');
const same = (a, b) => JSON.stringify([...a].sort()) === JSON.stringify([...b].sort());
const setDiff = (a, b) => [...a].filter((x) => !b.includes(x));

async function options(page, sel) {
  return page.locator(`${sel} option`).evaluateAll((os) => os.map((o) => o.value));
}

export async function formMatchesSchema(page, url) {
  const s = await api(page, 'GET', '/api/v1/schema/feeds');
  assert(s.status === 200, `GET /api/v1/schema/feeds answered ${s.status}`);
  const schema = s.data;
  await page.goto(url + '/#/feeds');
  await page.click('[data-testid=new-feed]');
  await page.locator('#f-transport').waitFor();
  const want = schema.transports.map((t) => t.name);
  const got = await options(page, '#f-transport');
  assert(same(got, want), `transports: the form offers [${got}], the admin accepts [${want}]: ` +
    `missing [${setDiff(want, got)}], extra [${setDiff(got, want)}]`);
  const offered = new Set();
  for (const t of schema.transports) {
    await page.selectOption('#f-transport', t.name);
    const enc = await options(page, '#f-encoding');
    assert(same(enc, t.encodings), `transport ${t.name}: the form offers encodings [${enc}], the admin [${t.encodings}]`);
    enc.forEach((e) => offered.add(e));
    if (t.member) for (const o of t.options)
      assert(await page.locator(fid(`${t.member}.${o.name}`)).count() + await page.locator(`[data-testid=member-${t.member}] legend:text-is("${o.name.replace(/_/g, ' ')}")`).count() > 0,
        `transport ${t.name}: option ${t.member}.${o.name} not in the form`);
    for (const e of t.encodings) {
      const d = schema.encodings.find((x) => x.name === e);
      if (!d?.member) continue;
      await page.selectOption('#f-encoding', e);
      for (const o of d.options)
        assert(await page.locator(fid(`${d.member}.${o.name}`)).count() + await page.locator(`[data-testid=member-${d.member}] legend:text-is("${o.name.replace(/_/g, ' ')}")`).count() > 0,
          `encoding ${e}: option ${d.member}.${o.name} not in the form`);
    }
  }
  const all = schema.encodings.map((e) => e.name);
  assert(same([...offered], all), `encodings: the form offers [${[...offered]}] over all transports, the admin accepts [${all}]`);
  await axeCheck(page, 'feed form (new)');
  await page.click('text=Cancel');
  ok(`feed form: the ${want.length} transports [${want}] and ${all.length} encodings of the admin's schema, per transport as it lists them`);
  return schema;
}

/** JSON with sorted keys: the database may reorder members. */
const canon = (o) => JSON.stringify(o, (k, v) => (v && typeof v === 'object' && !Array.isArray(v)
  ? Object.fromEntries(Object.keys(v).sort().map((x) => [x, v[x]])) : v));
const strip = (o) => { const c = structuredClone(o); delete c.version; delete c.updated_at; return c; };
/** o with path set to v; v null removes the member (what a merge patch's null does). */
function setPath(o, path, v) {
  const ks = path.split('.');
  let x = o;
  for (const k of ks.slice(0, -1)) x = x[k] ??= {};
  if (v === null) delete x[ks[ks.length - 1]]; else x[ks[ks.length - 1]] = v;
  return o;
}

/** feed: the object to create; path: the dotted member to edit; input: 'fill' or 'select';
 * text: what is typed or chosen ('' clears it); want: the stored value expected at path
 * (null: the member gone, and the PATCH sends null for it). */
export async function editOneField(page, url, { feed, path, input, text, want, shot, bad }) {
  const c = await api(page, 'POST', '/api/v1/feeds', feed);
  assert(c.status === 201, `create ${feed.name}: ${c.status} ${JSON.stringify(c.data)}`);
  const id = c.data.id;
  const before = await api(page, 'GET', '/api/v1/feeds/' + id);
  await page.goto(url + '/#/overview'); /* a fresh Feeds page: the list read again */
  await page.locator('#page-title:has-text("Overview")').waitFor();
  await page.goto(url + '/#/feeds');
  await page.click(`button[aria-label="Edit ${feed.name}"]`);
  await page.locator(`#form-title:has-text("${feed.name}")`).waitFor();
  const sel = fid(path);
  if (bad) { /* bad.text refused first: the admin's message next to the field (422 allowed by the caller) */
    await page.fill(sel, bad.text);
    await page.click('text=Save changes');
    const err = page.locator(`${sel}-err`);
    await err.waitFor();
    const t = await err.textContent();
    assert(bad.re.test(t), `${feed.name}: ${path} = ${bad.text}: "${t}" next to the field`);
    ok(`${feed.name}: ${path} = ${bad.text} refused, "${t}" next to the field`);
  }
  if (input === 'select') await page.selectOption(sel, text);
  else await page.fill(sel, text);
  const sent = page.waitForRequest((r) => r.method() === 'PATCH' && r.url().endsWith('/api/v1/feeds/' + id));
  if (shot) await page.screenshot({ path: shot, fullPage: true });
  await page.click('text=Save changes');
  const req = await sent;
  await page.locator(`text=Feed ${feed.name} saved`).waitFor();
  const after = await api(page, 'GET', '/api/v1/feeds/' + id);
  const expected = setPath(strip(before.data), path, want);
  assert(canon(strip(after.data)) === canon(expected),
    `${feed.name}: stored object after the edit of ${path}:\n  ${canon(strip(after.data))}\nexpected\n  ${canon(expected)}`);
  assert(after.data.version === before.data.version + 1, `${feed.name}: version ${before.data.version} -> ${after.data.version}`);
  assert(req.headers()['if-match'] === before.etag, `${feed.name}: PATCH If-Match ${req.headers()['if-match']}, read ${before.etag}`);
  const patch = JSON.parse(req.postData());
  const one = want === null ? path.split('.').reduceRight((v, k) => ({ [k]: v }), null) : setPath({}, path, want);
  assert(canon(patch) === canon(one), `${feed.name}: the form sent ${req.postData()}, not only ${JSON.stringify(one)}`);
  ok(`${feed.name} (${feed.transport}/${feed.encoding}): ${path} edited in the form; PATCH ${req.postData()} with If-Match; ` +
     `stored object differs only there (version ${before.data.version} -> ${after.data.version})`);
  return id;
}

/** Waits (up to ms) for topic on the Dead letters page, opens it, and checks a record's reason. */
export async function deadLetterShows(page, url, topic, { ms = 30000, shots, reason = /./ } = {}) {
  await until(page, ms, `dead-letter topic ${topic} with a record`, async () => {
    const r = await api(page, 'GET', '/api/v1/deadletters');
    return r.status === 200 && (r.data.topics ?? []).some((t) => t.topic === topic && t.records > 0);
  });
  await page.goto(url + '/#/deadletters');
  await page.locator(`button[aria-label="Show records of ${topic}"]`).click();
  const rec = page.locator('[data-testid=dl-record]').first();
  await rec.waitFor();
  const text = await rec.textContent();
  assert(reason.test(text), `dead letter of ${topic}: "${text}" does not match ${reason}`);
  await axeCheck(page, 'dead letters');
  if (shots) await page.screenshot({ path: join(shots, 'deadletters.png'), fullPage: true });
  ok(`dead letters: ${topic} listed; its newest record shows "${text.slice(0, 120)}…"`);
}

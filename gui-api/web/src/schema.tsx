// A form rendered from the admin's description of a feed (GET /api/v1/schema/feeds): every
// option is drawn by its type (integer, boolean, enum, string, map, object, array, filter),
// with its range, unit, default and help from the schema. The console knows no option, range
// or transport of its own: a new one in the admin's tables appears here by being added there.
// The value edited is the JSON object itself; diffPatch turns it into a JSON merge patch.
import { useState } from 'preact/hooks';
import { Field, Select, fieldId } from './ui';

export interface Option {
  name: string; path?: string; type: string; default?: unknown; minimum?: number; maximum?: number;
  maxLength?: number; enum?: string[]; unit?: string; help?: string; required?: boolean;
  secret?: boolean; options?: Option[]; minItems?: number; maxItems?: number;
}
export interface Transport {
  name: string; schemes: string[]; url_example?: string; encodings: string[]; acknowledged?: string;
  exactly_once?: boolean; fire_and_forget?: boolean; sections: string[]; member: string | null; options: Option[];
}
export interface Encoding { name: string; content_type?: string; default_batch?: number; member: string | null; options: Option[]; }
export interface FeedSchema { feed: Option[]; transports: Transport[]; encodings: Encoding[]; }

export type Path = (string | number)[];
export const pathText = (p: Path) => p.reduce<string>((s, k) => (typeof k === 'number' ? `${s}[${k}]` : s ? `${s}.${k}` : k), '');

export function getIn(o: any, p: Path): any {
  for (const k of p) { if (o === null || typeof o !== 'object') return undefined; o = o[k]; }
  return o;
}

/** A copy of o with p set to v; undefined removes the member. An object left empty stays
 * (an edit's patch then names only the member removed: {"delivery": {"timeout_ms": null}}). */
export function setIn(o: any, p: Path, v: any): any {
  if (!p.length) return v;
  const [k, ...rest] = p;
  const c: any = Array.isArray(o) ? [...o] : o && typeof o === 'object' ? { ...o } : typeof k === 'number' ? [] : {};
  const nv = setIn(c[k], rest, v);
  if (nv === undefined && !Array.isArray(c)) delete c[k];
  else c[k] = nv;
  return c;
}

/** o without its empty objects, for a create (the defaults of an untouched section apply). */
export function pruneEmpty(o: any): any {
  if (!isObject(o)) return o;
  const out: Record<string, any> = {};
  for (const [k, v] of Object.entries(o)) {
    const x = pruneEmpty(v);
    if (!(isObject(x) && !Object.keys(x).length)) out[k] = x;
  }
  return out;
}
const isObject = (x: any) => x !== null && typeof x === 'object' && !Array.isArray(x);

export function deepEqual(a: any, b: any): boolean {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== 'object') return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a), kb = Object.keys(b);
  return ka.length === kb.length && ka.every((k) => deepEqual(a[k], b[k]));
}

/** The RFC 7396 merge patch that turns before into after: only the members that differ,
 * null for a member removed; objects recursively, arrays and scalars whole. */
export function diffPatch(before: any, after: any, skip: string[] = []): Record<string, any> {
  const out: Record<string, any> = {};
  for (const k of new Set([...Object.keys(before || {}), ...Object.keys(after || {})])) {
    if (skip.includes(k)) continue;
    const a = before?.[k], b = after?.[k];
    if (b === undefined) { if (a !== undefined && a !== null) out[k] = null; continue; }
    if (isObject(a) && isObject(b)) { const d = diffPatch(a, b); if (Object.keys(d).length) out[k] = d; continue; }
    if (!deepEqual(a, b)) out[k] = b;
  }
  return out;
}

/** The text a hint shows: help, then range, unit and default from the schema. */
export function hintOf(o: Option): string {
  const parts: string[] = [];
  const unit = o.unit ? ' ' + o.unit : '';
  /* a bound past 2^53 (INT64_MAX: "no limit") does not survive JSON numbers: left out */
  if (o.maximum !== undefined && o.maximum > Number.MAX_SAFE_INTEGER) o = { ...o, maximum: undefined };
  if (o.minimum !== undefined && o.maximum !== undefined) parts.push(`${o.minimum}–${o.maximum}${unit}`);
  else if (o.minimum !== undefined) parts.push(`≥ ${o.minimum}${unit}`);
  else if (o.maximum !== undefined) parts.push(`≤ ${o.maximum}${unit}`);
  else if (unit) parts.push(o.unit!);
  if (o.maxLength !== undefined) parts.push(`at most ${o.maxLength} characters`);
  /* booleans and enums say their default in the choice itself */
  if (o.default !== undefined && o.default !== null && typeof o.default !== 'object' && o.type !== 'boolean' && o.type !== 'enum')
    parts.push(`default ${String(o.default)}`);
  if (o.secret) parts.push('names a file on the adapter\'s host');
  const tail = parts.join('; ');
  return [o.help, tail].filter(Boolean).join(' — ');
}

/** Every path the form shows, for placing the admin's field errors (ui.placeError). */
export function knownPaths(opts: Option[], v: any, base: Path, out: string[] = []): string[] {
  for (const o of opts) {
    const p = [...base, o.name];
    out.push(pathText(p));
    if (o.type === 'object' && o.options) knownPaths(o.options, v, p, out);
    if (o.type === 'array' && o.options) {
      const arr = getIn(v, p);
      if (Array.isArray(arr)) arr.forEach((_, i) => { out.push(pathText([...p, i])); knownPaths(o.options!, v, [...p, i], out); });
    }
  }
  return out;
}

export interface Ctx {
  value: any; set: (p: Path, v: any) => void; errors: Record<string, string>;
  filters: string[]; inlineFilter: boolean; urlHint: (url: string) => string;
}

const label = (o: Option) => o.name.replace(/_/g, ' ');

function intOf(s: string): any {
  const t = s.trim();
  if (!t) return undefined;
  return /^-?\d+$/.test(t) ? Number(t) : t; /* not a number: sent as typed, the admin names the field */
}

function MapField(p: { o: Option; path: Path; ctx: Ctx }) {
  const id = fieldId(pathText(p.path));
  const cur = getIn(p.ctx.value, p.path);
  const fromValue = () => Object.entries(cur || {}).map(([k, v]) => `${k}: ${v}`).join('\n');
  const [text, setText] = useState(fromValue);
  const err = p.ctx.errors[pathText(p.path)];
  const h = hintOf(p.o);
  const onInput = (s: string) => {
    setText(s);
    const out: Record<string, string> = {};
    for (const l of s.split('\n')) {
      const i = l.indexOf(':');
      if (l.trim() && i > 0) out[l.slice(0, i).trim()] = l.slice(i + 1).trim();
    }
    p.ctx.set(p.path, Object.keys(out).length ? out : undefined);
  };
  const desc = [h ? id + '-hint' : '', err ? id + '-err' : ''].filter(Boolean).join(' ');
  return (
    <div class={err ? 'field wide invalid' : 'field wide'}>
      <label for={id}>{label(p.o)} (one "name: value" a line)</label>
      <textarea id={id} name={pathText(p.path)} value={text} aria-describedby={desc || undefined}
                aria-invalid={err ? 'true' : undefined} onInput={(e) => onInput((e.target as HTMLTextAreaElement).value)} />
      {h && <small id={id + '-hint'} class="hint">{h}</small>}
      {err && <span id={id + '-err'} class="error" role="alert">{err}</span>}
    </div>
  );
}

function JsonField(p: { o: Option; path: Path; ctx: Ctx }) {
  const id = fieldId(pathText(p.path));
  const cur = getIn(p.ctx.value, p.path);
  const [text, setText] = useState(() => (cur === undefined ? '' : JSON.stringify(cur, null, 1)));
  const [bad, setBad] = useState('');
  const err = p.ctx.errors[pathText(p.path)] || bad;
  const onInput = (s: string) => {
    setText(s);
    if (!s.trim()) { setBad(''); p.ctx.set(p.path, undefined); return; }
    try { p.ctx.set(p.path, JSON.parse(s)); setBad(''); } catch { setBad('not JSON yet'); }
  };
  const h = hintOf(p.o);
  return (
    <div class={err ? 'field wide invalid' : 'field wide'}>
      <label for={id}>{label(p.o)} (JSON)</label>
      <textarea id={id} name={pathText(p.path)} value={text} aria-describedby={[h ? id + '-hint' : '', err ? id + '-err' : ''].filter(Boolean).join(' ') || undefined}
                onInput={(e) => onInput((e.target as HTMLTextAreaElement).value)} />
      {h && <small id={id + '-hint'} class="hint">{h}</small>}
      {err && <span id={id + '-err'} class="error" role="alert">{err}</span>}
    </div>
  );
}

const scalar = (o: Option) => ['integer', 'boolean', 'enum', 'string'].includes(o.type);

function ArrayRows(p: { o: Option; path: Path; ctx: Ctx }) {
  const items: any[] = getIn(p.ctx.value, p.path) ?? [];
  const key = pathText(p.path);
  const err = p.ctx.errors[key];
  const one = label(p.o).replace(/s$/, '');
  const canRemove = items.length > (p.o.minItems ?? 0);
  return (
    <fieldset class="rows"><legend>{label(p.o)}</legend>
      {p.o.help && <p class="hint">{p.o.help}</p>}
      {err && <span id={fieldId(key) + '-err'} class="error" role="alert">{err}</span>}
      {items.map((_, i) => (
        <div class="row">
          {p.o.options!.map((c) => <OptionField o={c} path={[...p.path, i, c.name]} ctx={p.ctx}
                                                 labelText={`${one} ${i + 1} ${label(c)}`} />)}
          {canRemove && (
            <button type="button" class="secondary" aria-label={`Remove ${one} ${i + 1}`}
                    onClick={() => p.ctx.set(p.path, items.length > 1 ? items.filter((_, j) => j !== i) : undefined)}>Remove</button>
          )}
        </div>
      ))}
      {(p.o.maxItems === undefined || items.length < p.o.maxItems) &&
        <button type="button" class="secondary" onClick={() => p.ctx.set(p.path, [...items, {}])}>Add {one}</button>}
    </fieldset>
  );
}

/** One option, drawn by its type. */
export function OptionField(p: { o: Option; path: Path; ctx: Ctx; labelText?: string }) {
  const { o, path, ctx } = p;
  const key = pathText(path);
  const v = getIn(ctx.value, path);
  const lab = p.labelText ?? label(o);
  const h = hintOf(o);
  switch (o.type) {
    case 'integer':
      return <Field path={key} label={lab} type="text" required={o.required} value={v === undefined ? '' : String(v)}
                    errors={ctx.errors} hint={h} inputMode="numeric"
                    placeholder={o.default !== undefined && typeof o.default !== 'object' ? String(o.default) : undefined}
                    onInput={(s) => ctx.set(path, intOf(s))} />;
    case 'boolean': {
      const dflt = o.default === undefined ? '(not set)' : `(default: ${o.default ? 'yes' : 'no'})`;
      return <Select path={key} label={lab} value={v === undefined ? '' : String(v)} errors={ctx.errors} hint={h}
                     options={[['', dflt], ['true', 'yes'], ['false', 'no']]}
                     onChange={(s) => ctx.set(path, s === '' ? undefined : s === 'true')} />;
    }
    case 'enum': {
      const dflt = o.default === undefined ? '(not set)' : `(default: ${String(o.default)})`;
      return <Select path={key} label={lab} value={v === undefined ? '' : String(v)} errors={ctx.errors} hint={h}
                     options={[['', dflt], ...(o.enum ?? []).map((x) => [x, x] as [string, string])]}
                     onChange={(s) => ctx.set(path, s === '' ? undefined : s)} />;
    }
    case 'filter': {
      const cur = typeof v === 'string' ? v : v && typeof v === 'object' ? '__inline' : '';
      return <Select path={key} label={lab} value={cur} errors={ctx.errors} hint={o.help}
                     options={[['', '(none: every copy)'], ...[...ctx.filters, ...(typeof v === 'string' && !ctx.filters.includes(v) ? [v] : [])].map((n) => [n, n] as [string, string]),
                       ...(ctx.inlineFilter ? [['__inline', '(inline filter, kept as it is)'] as [string, string]] : [])]}
                     onChange={(s) => { if (s !== '__inline') ctx.set(path, s === '' ? undefined : s); }} />;
    }
    case 'map':
      return <MapField o={o} path={path} ctx={ctx} />;
    case 'object':
      if (!o.options) return <JsonField o={o} path={path} ctx={ctx} />;
      return (
        <fieldset><legend>{lab}</legend>
          {o.help && <p class="hint">{o.help}</p>}
          {ctx.errors[key] && <span class="error" role="alert">{ctx.errors[key]}</span>}
          <div class="grid">{o.options.map((c) => <OptionField o={c} path={[...path, c.name]} ctx={ctx} />)}</div>
        </fieldset>
      );
    case 'array':
      if (o.options && o.options.every(scalar)) return <ArrayRows o={o} path={path} ctx={ctx} />;
      return <JsonField o={o} path={path} ctx={ctx} />;
    case 'string': {
      const url = o.name === 'url' ? ctx.urlHint(typeof v === 'string' ? v : '') : '';
      return <Field path={key} label={lab} required={o.required} value={v === undefined || v === null ? '' : String(v)}
                    errors={ctx.errors} hint={[h, url].filter(Boolean).join(' — ') || undefined}
                    onInput={(s) => ctx.set(path, s.trim() === '' ? undefined : s)} />;
    }
    default:
      return <JsonField o={o} path={path} ctx={ctx} />;
  }
}

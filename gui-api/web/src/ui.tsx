// Small shared pieces: a labelled input with its error next to it (aria-describedby), a
// status line announced to screen readers, and the error-to-field mapping of the forms.
import type { ComponentChildren } from 'preact';
import type { ApiError } from './api';
import { describe } from './api';

export function fieldId(path: string): string {
  return 'f-' + path.replace(/[^A-Za-z0-9_-]/g, '_');
}

interface FieldProps {
  path: string; label: string; value: string; onInput: (v: string) => void;
  errors: Record<string, string>; hint?: string; type?: string; required?: boolean;
  placeholder?: string; readOnly?: boolean; inputMode?: string;
}

export function Field(p: FieldProps) {
  const id = fieldId(p.path);
  const err = p.errors[p.path];
  const desc = [p.hint ? id + '-hint' : '', err ? id + '-err' : ''].filter(Boolean).join(' ');
  return (
    <div class={err ? 'field invalid' : 'field'}>
      <label for={id}>{p.label}{p.required ? ' *' : ''}</label>
      <input id={id} name={p.path} type={p.type || 'text'} value={p.value} required={p.required}
             placeholder={p.placeholder} readOnly={p.readOnly} inputMode={p.inputMode as any}
             aria-invalid={err ? 'true' : undefined} aria-describedby={desc || undefined}
             onInput={(e) => p.onInput((e.target as HTMLInputElement).value)} />
      {p.hint && <small id={id + '-hint'} class="hint">{p.hint}</small>}
      {err && <span id={id + '-err'} class="error" role="alert">{err}</span>}
    </div>
  );
}

interface SelectProps {
  path: string; label: string; value: string; options: [string, string][];
  onChange: (v: string) => void; errors: Record<string, string>; hint?: string;
}

export function Select(p: SelectProps) {
  const id = fieldId(p.path);
  const err = p.errors[p.path];
  const desc = [p.hint ? id + '-hint' : '', err ? id + '-err' : ''].filter(Boolean).join(' ');
  return (
    <div class={err ? 'field invalid' : 'field'}>
      <label for={id}>{p.label}</label>
      <select id={id} name={p.path} value={p.value} aria-describedby={desc || undefined}
              aria-invalid={err ? 'true' : undefined}
              onChange={(e) => p.onChange((e.target as HTMLSelectElement).value)}>
        {p.options.map(([v, t]) => <option value={v}>{t}</option>)}
      </select>
      {p.hint && <small id={id + '-hint'} class="hint">{p.hint}</small>}
      {err && <span id={id + '-err'} class="error" role="alert">{err}</span>}
    </div>
  );
}

export function Check(p: { path: string; label: string; checked: boolean; onChange: (v: boolean) => void }) {
  const id = fieldId(p.path);
  return (
    <div class="field check">
      <input id={id} type="checkbox" checked={p.checked}
             onChange={(e) => p.onChange((e.target as HTMLInputElement).checked)} />
      <label for={id}>{p.label}</label>
    </div>
  );
}

export function Status(p: { msg: string; kind?: 'ok' | 'error' }) {
  return <p class={'status ' + (p.kind || 'ok')} role="status" aria-live="polite">{p.msg}</p>;
}

/** The field an error names gets the message; one no field shows shows at the form's top. */
export function placeError(e: ApiError, known: string[]): { fields: Record<string, string>; top: string } {
  const f = e.field || '';
  const msg = describe(e);
  if (f && known.includes(f)) return { fields: { [f]: msg }, top: '' };
  /* the nearest drawn parent: the longest known path the field starts with */
  const parent = known.filter((k) => f.startsWith(k + '.') || f.startsWith(k + '['))
    .sort((a, b) => b.length - a.length)[0];
  if (parent) return { fields: { [parent]: msg }, top: '' };
  return { fields: {}, top: f ? `${f}: ${msg}` : msg };
}

export function Page(p: { title: string; children: ComponentChildren }) {
  return (
    <section aria-labelledby="page-title">
      <h1 id="page-title">{p.title}</h1>
      {p.children}
    </section>
  );
}

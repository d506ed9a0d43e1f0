// Label and field selectors as the API server parses them for `list` and `deletecollection`.
import { badRequest } from './errors.ts';
import type { KubeObject } from './types.ts';

type Requirement =
  | { key: string; op: 'in' | 'notin'; values: string[] }
  | { key: string; op: '=' | '!='; values: [string] }
  | { key: string; op: 'exists' | '!exists'; values: [] };

const KEY = String.raw`[A-Za-z0-9][-A-Za-z0-9_./]*`;
const VALUE = String.raw`[A-Za-z0-9_.-]*`;
const SET = new RegExp(String.raw`^(${KEY})\s+(in|notin)\s+\(([^)]*)\)$`);
const EQUALITY = new RegExp(String.raw`^(${KEY})\s*(==|=|!=)\s*(${VALUE})$`);
const EXISTS = new RegExp(String.raw`^(!?)\s*(${KEY})$`);

/** Splits on commas that are not inside a `(…)` value set. */
function splitTerms(selector: string): string[] {
  const terms: string[] = [];
  let depth = 0;
  let current = '';
  for (const ch of selector) {
    if (ch === '(') depth += 1;
    if (ch === ')') depth -= 1;
    if (ch === ',' && depth === 0) {
      terms.push(current.trim());
      current = '';
    } else {
      current += ch;
    }
  }
  terms.push(current.trim());
  return terms.filter((t) => t !== '');
}

export function parseLabelSelector(selector: string): Requirement[] {
  return splitTerms(selector).map((term) => {
    const set = SET.exec(term);
    if (set) {
      const values = (set[3] ?? '')
        .split(',')
        .map((v) => v.trim())
        .filter((v) => v !== '');
      return { key: set[1] ?? '', op: set[2] === 'in' ? 'in' : 'notin', values };
    }
    const eq = EQUALITY.exec(term);
    if (eq) return { key: eq[1] ?? '', op: eq[2] === '!=' ? '!=' : '=', values: [eq[3] ?? ''] };
    const exists = EXISTS.exec(term);
    if (exists) return { key: exists[2] ?? '', op: exists[1] === '!' ? '!exists' : 'exists', values: [] };
    throw badRequest(`unable to parse requirement: found '${term}', expected a label selector term`);
  });
}

function satisfies(labels: Record<string, string>, req: Requirement): boolean {
  const has = Object.hasOwn(labels, req.key);
  const value = labels[req.key];
  switch (req.op) {
    case 'in':
      return has && req.values.includes(value ?? '');
    case 'notin':
      return !has || !req.values.includes(value ?? '');
    case '=':
      return has && value === req.values[0];
    case '!=':
      return !has || value !== req.values[0];
    case 'exists':
      return has;
    case '!exists':
      return !has;
  }
}

export function labelMatcher(selector: string | undefined): (object: KubeObject) => boolean {
  if (selector === undefined || selector.trim() === '') return () => true;
  const requirements = parseLabelSelector(selector);
  return (object) => requirements.every((req) => satisfies(object.metadata.labels ?? {}, req));
}

const FIELDS_FOR_ALL = ['metadata.name', 'metadata.namespace'];
const FIELDS_FOR_KIND: Record<string, string[]> = { Pod: ['spec.nodeName', 'status.phase'] };

function fieldValue(object: KubeObject, path: string): string {
  let node: unknown = object;
  for (const part of path.split('.')) {
    node = typeof node === 'object' && node !== null ? (node as Record<string, unknown>)[part] : undefined;
  }
  return typeof node === 'string' ? node : '';
}

export function fieldMatcher(selector: string | undefined, kind: string): (object: KubeObject) => boolean {
  if (selector === undefined || selector.trim() === '') return () => true;
  const supported = [...FIELDS_FOR_ALL, ...(FIELDS_FOR_KIND[kind] ?? [])];
  const terms = splitTerms(selector).map((term) => {
    const match = /^([A-Za-z.]+)\s*(==|=|!=)\s*(.*)$/.exec(term);
    if (!match) throw badRequest(`invalid selector: '${term}'; can't understand '${term}'`);
    const [, field = '', op, value = ''] = match;
    if (!supported.includes(field)) throw badRequest(`field label not supported: ${field}`);
    return { field, negate: op === '!=', value };
  });
  return (object) => terms.every((t) => (fieldValue(object, t.field) === t.value) !== t.negate);
}

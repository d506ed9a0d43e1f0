// The patch formats client-node sends: JSON Patch (RFC 6902, its default for PATCH) and JSON Merge
// Patch (RFC 7386). Strategic merge patch is treated as a merge patch: lists are replaced whole.
import { KubeError, badRequest } from './errors.ts';
import { clone, isObject, sameJson, type JsonObject } from './types.ts';

export const JSON_PATCH = 'application/json-patch+json';
export const MERGE_PATCH = 'application/merge-patch+json';
export const STRATEGIC_MERGE_PATCH = 'application/strategic-merge-patch+json';
export const APPLY_PATCH = 'application/apply-patch+yaml';

export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return clone(patch);
  const result: JsonObject = isObject(target) ? clone(target) : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete result[key];
    else result[key] = mergePatch(result[key], value);
  }
  return result;
}

interface Operation {
  op: string;
  path: string;
  from?: string;
  value?: unknown;
}

function rejected(message: string): KubeError {
  return new KubeError(
    422,
    'Invalid',
    `the server rejected our request due to an error in our request: ${message}`,
  );
}

function tokens(pointer: string): string[] {
  if (pointer === '') return [];
  if (!pointer.startsWith('/')) throw rejected(`invalid JSON pointer "${pointer}"`);
  return pointer
    .slice(1)
    .split('/')
    .map((t) => t.replaceAll('~1', '/').replaceAll('~0', '~'));
}

type Container = JsonObject | unknown[];

/** Walks to the parent of the pointer's last token; throws when a step is missing. */
function parentOf(doc: unknown, path: string): { parent: Container; key: string } {
  const parts = tokens(path);
  const key = parts.pop();
  if (key === undefined) throw rejected('the whole document cannot be patched');
  let node: unknown = doc;
  for (const part of parts) {
    node = Array.isArray(node) ? node[Number(part)] : isObject(node) ? node[part] : undefined;
    if (node === undefined) throw rejected(`doc is missing path: "${path}"`);
  }
  if (!Array.isArray(node) && !isObject(node)) throw rejected(`doc is missing path: "${path}"`);
  return { parent: node, key };
}

function indexIn(list: unknown[], key: string, forInsert: boolean): number {
  if (forInsert && key === '-') return list.length;
  const index = Number(key);
  const limit = forInsert ? list.length : list.length - 1;
  if (!/^\d+$/.test(key) || index > limit) throw rejected(`index ${key} out of range`);
  return index;
}

function read(doc: unknown, path: string): unknown {
  const { parent, key } = parentOf(doc, path);
  const value = Array.isArray(parent) ? parent[indexIn(parent, key, false)] : parent[key];
  if (value === undefined) throw rejected(`doc is missing path: "${path}"`);
  return value;
}

function add(doc: unknown, path: string, value: unknown): void {
  const { parent, key } = parentOf(doc, path);
  if (Array.isArray(parent)) parent.splice(indexIn(parent, key, true), 0, clone(value));
  else parent[key] = clone(value);
}

function remove(doc: unknown, path: string): void {
  const { parent, key } = parentOf(doc, path);
  if (Array.isArray(parent)) {
    parent.splice(indexIn(parent, key, false), 1);
    return;
  }
  if (!(key in parent)) throw rejected(`doc is missing path: "${path}"`);
  delete parent[key];
}

export function jsonPatch(target: unknown, operations: unknown): unknown {
  if (!Array.isArray(operations)) throw badRequest('json patch must be a list of operations');
  const doc = clone(target);
  for (const raw of operations) {
    if (!isObject(raw) || typeof raw['op'] !== 'string' || typeof raw['path'] !== 'string') {
      throw badRequest('json patch operations need "op" and "path"');
    }
    const op = raw as unknown as Operation;
    switch (op.op) {
      case 'add':
        add(doc, op.path, op.value);
        break;
      case 'remove':
        remove(doc, op.path);
        break;
      case 'replace':
        read(doc, op.path);
        remove(doc, op.path);
        add(doc, op.path, op.value);
        break;
      case 'move':
      case 'copy': {
        const value = read(doc, op.from ?? '');
        if (op.op === 'move') remove(doc, op.from ?? '');
        add(doc, op.path, value);
        break;
      }
      case 'test':
        if (!sameJson(read(doc, op.path), op.value)) throw rejected(`testing value ${op.path} failed`);
        break;
      default:
        throw badRequest(`unknown json patch operation "${op.op}"`);
    }
  }
  return doc;
}

/** Applies a PATCH body according to its Content-Type. */
export function applyPatch(current: JsonObject, body: unknown, contentType: string | undefined): JsonObject {
  const type = (contentType ?? '').split(';')[0]?.trim();
  let result: unknown;
  if (type === JSON_PATCH) result = jsonPatch(current, body);
  else if (type === MERGE_PATCH || type === STRATEGIC_MERGE_PATCH) result = mergePatch(current, body);
  else {
    throw new KubeError(
      415,
      'UnsupportedMediaType',
      `the body of the request was in an unknown format - accepted media types include: ${JSON_PATCH}, ${MERGE_PATCH}, ${STRATEGIC_MERGE_PATCH}`,
    );
  }
  if (!isObject(result)) throw badRequest('patch must produce an object');
  return result;
}

// Table-driven checks of the fake's pure parts: selectors, patch formats and the name hash.
import { describe, expect, it } from 'vitest';
import { nameHash } from './conditions.ts';
import { jsonPatch, mergePatch } from './patch.ts';
import { fieldMatcher, labelMatcher } from './selectors.ts';
import type { KubeObject } from './types.ts';

const pod = (labels: Record<string, string>, name = 'p'): KubeObject =>
  ({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'n', labels },
    status: { phase: 'Running' },
  }) as unknown as KubeObject;

describe('label selectors', () => {
  const cases: [string, Record<string, string>, boolean][] = [
    ['', {}, true],
    ['a=b', { a: 'b' }, true],
    ['a==b', { a: 'c' }, false],
    ['a!=b', {}, true],
    ['a!=b', { a: 'b' }, false],
    ['a', { a: '' }, true],
    ['!a', { a: 'x' }, false],
    ['a in (x, y)', { a: 'y' }, true],
    ['a in (x,y)', {}, false],
    ['a notin (x,y)', {}, true],
    ['a notin (x,y)', { a: 'x' }, false],
    ['app.kubernetes.io/name=web,tier in (a,b),!gone', { 'app.kubernetes.io/name': 'web', tier: 'b' }, true],
  ];
  it.each(cases)('%j against %j is %s', (selector, labels, expected) => {
    expect(labelMatcher(selector)(pod(labels))).toBe(expected);
  });

  it('refuses what it cannot parse', () => {
    expect(() => labelMatcher('a in (b')).toThrow(/unable to parse/);
    expect(() => labelMatcher('=b')).toThrow(/unable to parse/);
  });
});

describe('field selectors', () => {
  it('matches metadata.name and pod fields, refuses other fields', () => {
    expect(fieldMatcher('metadata.name=p', 'Pod')(pod({}))).toBe(true);
    expect(fieldMatcher('metadata.name!=p', 'Pod')(pod({}))).toBe(false);
    expect(fieldMatcher('status.phase=Running,metadata.namespace=n', 'Pod')(pod({}))).toBe(true);
    expect(() => fieldMatcher('status.phase=Running', 'Sandbox')).toThrow(/not supported/);
  });
});

describe('patches', () => {
  it('merge patch replaces lists, deletes on null and merges maps', () => {
    const target = { a: { b: 1, c: [1, 2] }, d: 'x' };
    expect(mergePatch(target, { a: { c: [3] }, d: null })).toEqual({ a: { b: 1, c: [3] } });
    expect(target).toEqual({ a: { b: 1, c: [1, 2] }, d: 'x' });
  });

  it('JSON patch adds, replaces, removes, moves and tests', () => {
    const doc = { list: [1, 2], map: { k: 'v' } };
    const ops = [
      { op: 'add', path: '/list/-', value: 3 },
      { op: 'replace', path: '/map/k', value: 'w' },
      { op: 'remove', path: '/list/0' },
      { op: 'move', from: '/map/k', path: '/moved' },
      { op: 'test', path: '/list', value: [2, 3] },
      { op: 'add', path: '/a~1b', value: true },
    ];
    expect(jsonPatch(doc, ops)).toEqual({ list: [2, 3], map: {}, moved: 'w', 'a/b': true });
    expect(() => jsonPatch(doc, [{ op: 'replace', path: '/missing', value: 1 }])).toThrow(/missing path/);
    expect(() => jsonPatch(doc, [{ op: 'test', path: '/list', value: [] }])).toThrow(/testing value/);
  });
});

describe('name hash', () => {
  it('is FNV-1a 32-bit in 8 hex characters', () => {
    expect(nameHash('')).toBe('811c9dc5');
    expect(nameHash('a')).toBe('e40c292c');
    expect(nameHash('foobar')).toBe('bf9cf968');
  });
});

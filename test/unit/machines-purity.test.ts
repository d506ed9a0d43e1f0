// machines/ stays pure: no clock, no randomness, no process state, no timers, no I/O. What it may
// import is checked by dependency-cruiser (.dependency-cruiser.js, `npm run lint:layers`); this reads
// the source for what an import rule cannot see.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const machinesDir = fileURLToPath(new URL('../../machines/', import.meta.url));
const files = readdirSync(machinesDir, { recursive: true, encoding: 'utf8' })
  .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'))
  .sort();

/** Blanks block comments and `//` comments that follow whitespace, keeping every line break. */
function stripComments(source: string): string {
  return source
    .replace(/\/\*[\s\S]*?\*\//g, (comment) => comment.replace(/[^\n]/g, ' '))
    .replace(/(^|\s)\/\/.*$/gm, '$1');
}

const forbidden: readonly [RegExp, string][] = [
  [/\bDate\b/, 'Date (clock)'],
  [/\bMath\.random\b/, 'Math.random'],
  [/\bperformance\.now\b/, 'performance.now (clock)'],
  [/\bcrypto\./, 'crypto (randomness)'],
  [/\bprocess\./, 'process'],
  [/\b(setTimeout|setInterval|setImmediate)\b/, 'timers'],
  [/\bfetch\(/, 'fetch (I/O)'],
];

describe('machines/ purity', () => {
  it('has machine sources to check', () => {
    expect(files.length).toBeGreaterThan(0);
  });

  it('reads no clock, no randomness and no process state', () => {
    const found: string[] = [];
    for (const file of files) {
      const lines = stripComments(readFileSync(join(machinesDir, file), 'utf8')).split('\n');
      lines.forEach((text, i) => {
        for (const [pattern, what] of forbidden) {
          if (pattern.test(text)) found.push(`machines/${file}:${i + 1} ${what}`);
        }
      });
    }
    expect(found).toEqual([]);
  });
});

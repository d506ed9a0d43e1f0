// Layering: dependencies point inwards (DESIGN.md "Layout", docs/architecture.md "Layers"). A small
// import scanner reads every source file of the layers below and checks three things: no cycle among
// value imports, each layer imports only what its rule allows, and machines/ stays pure (no Node
// modules, no clock, no randomness). Known breaches are listed in `exceptions`, each with its
// reason, so a new breach fails while the list can only shrink.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { builtinModules } from 'node:module';
import { dirname, join, posix, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../../', import.meta.url));

const layers = ['machines', 'actors', 'workers', 'providers', 'store', 'http', 'config', 'cli'] as const;
type Layer = (typeof layers)[number];

interface Edge {
  /** Repo-relative path of the importing file, `/`-separated. */
  from: string;
  /** Repo-relative path of the imported file, or the bare specifier of a package. */
  to: string;
  specifier: string;
  line: number;
  /** `import type`, `export type`, or every specifier marked inline `type`: binds nothing at run time. */
  typeOnly: boolean;
  local: boolean;
}

// ---------------------------------------------------------------------------------------------
// The scanner

/** Removes block comments and `//` comments that follow whitespace (so `https://` in a string stays). */
function stripComments(source: string): string {
  return source
    .replace(/\/\*[\s\S]*?\*\//g, (comment) => comment.replace(/[^\n]/g, ' '))
    .replace(/(^|\s)\/\/.*$/gm, '$1');
}

// The clause between `import` and `from` may only hold names, braces, commas, `*`, `as`, `type` and
// whitespace, so a match can never run on into code.
const importFrom = /^[ \t]*import\s+(type\s+)?([\w$*{},\s]+?)\s*from\s*['"]([^'"]+)['"]/gm;
const exportFrom =
  /^[ \t]*export\s+(type\s+)?(\*(?:\s+as\s+[\w$]+)?|\{[\w$,\s]*\})\s*from\s*['"]([^'"]+)['"]/gm;
const sideEffect = /^[ \t]*import\s*['"]([^'"]+)['"]/gm;
const dynamicImport = /\bimport\(\s*['"]([^'"]+)['"]\s*\)/g;

/** True when the clause binds nothing but inline `type` specifiers: `{ type A, type B as C }`. */
function onlyInlineTypes(clause: string): boolean {
  const braces = /^\{([\s\S]*)\}$/.exec(clause.trim());
  if (braces === null) return false;
  const specifiers = (braces[1] ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  return specifiers.length > 0 && specifiers.every((s) => /^type\s+[\w$]/.test(s));
}

interface RawImport {
  specifier: string;
  /** 1-based; stripping comments keeps every line break, so lines keep their numbers. */
  line: number;
  typeOnly: boolean;
}

function scanImports(source: string): RawImport[] {
  const text = stripComments(source);
  const found: RawImport[] = [];
  for (const pattern of [importFrom, exportFrom]) {
    for (const m of text.matchAll(pattern)) {
      const clause = m[2] ?? '';
      found.push({
        specifier: m[3] ?? '',
        line: lineOf(text, m.index),
        typeOnly: m[1] !== undefined || onlyInlineTypes(clause),
      });
    }
  }
  for (const pattern of [sideEffect, dynamicImport]) {
    for (const m of text.matchAll(pattern)) {
      found.push({ specifier: m[1] ?? '', line: lineOf(text, m.index), typeOnly: false });
    }
  }
  return found.sort((a, b) => a.line - b.line);
}

function sourceFiles(layer: Layer): string[] {
  const out: string[] = [];
  const walk = (dir: string): void => {
    for (const entry of readdirSync(join(root, dir), { withFileTypes: true })) {
      const path = posix.join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      // Test files that sit next to their subject (providers/**/*.test.ts) are tests, not a layer.
      else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts')) out.push(path);
    }
  };
  if (existsSync(join(root, layer))) walk(layer);
  return out.sort();
}

function lineOf(text: string, index: number): number {
  return text.slice(0, index).split('\n').length;
}

function edgesOf(file: string): Edge[] {
  const source = readFileSync(join(root, file), 'utf8');
  return scanImports(source).map((raw) => {
    const local = raw.specifier.startsWith('./') || raw.specifier.startsWith('../');
    const to = local
      ? relative(root, join(root, dirname(file), raw.specifier))
          .split(/[\\/]/)
          .join('/')
      : raw.specifier;
    return {
      from: file,
      to,
      specifier: raw.specifier,
      line: raw.line,
      typeOnly: raw.typeOnly,
      local,
    };
  });
}

const files = layers.flatMap(sourceFiles);
const edges = files.flatMap(edgesOf);
const localEdges = edges.filter((e) => e.local);
const layerOf = (path: string): string => path.split('/')[0] ?? '';
const show = (e: Edge): string => `${e.from}:${e.line} → ${e.to}${e.typeOnly ? ' (type-only)' : ''}`;

// ---------------------------------------------------------------------------------------------
// The rules

/**
 * One thing a layer may import. `to` is a directory (ending in `/`), an exact file, or a pattern.
 * `typesOnly`: only `import type` / `export type` / all-inline-`type` imports. `from`: only these
 * importers (directory prefixes or exact files) within the layer.
 */
interface Allowance {
  to: string | RegExp;
  typesOnly?: boolean;
  from?: readonly string[];
}

const matches = (target: string | RegExp, path: string): boolean =>
  typeof target !== 'string'
    ? target.test(path)
    : target.endsWith('/')
      ? path.startsWith(target)
      : path === target;

const rules: Record<Layer, readonly Allowance[] | 'anything'> = {
  // Pure machines: nothing of ours outside machines/.
  machines: [{ to: 'machines/' }],
  // Repositories; the embedded ports (grants, run selections) and the simulated provider's table
  // implement interfaces declared by the layers above, so they may name those shared types.
  store: [
    { to: 'store/' },
    { to: 'actors/ports.ts', typesOnly: true },
    { to: 'providers/provider.ts', typesOnly: true },
  ],
  actors: [
    { to: 'machines/' },
    { to: 'store/' },
    { to: 'actors/' },
    { to: 'providers/provider.ts', typesOnly: true },
  ],
  http: [
    { to: 'http/' },
    { to: 'actors/' },
    { to: 'machines/' },
    { to: 'config/' },
    // Rows and the Database handle may be named as types anywhere (a type writes nothing), but only
    // the embedded admin routes and the production port adapters (http/clients) call store/: a
    // handler never writes a row itself.
    { to: 'store/', typesOnly: true },
    { to: 'store/', from: ['http/routes/admin.ts', 'http/clients/'] },
    { to: 'providers/', typesOnly: true },
    { to: /^providers\/(.+\/)?identity\.ts$/ },
  ],
  workers: [{ to: 'actors/' }, { to: 'store/' }, { to: 'providers/' }, { to: 'workers/' }, { to: 'config/' }],
  // The simulated provider keeps its own table in store/.
  providers: [{ to: 'providers/' }, { to: 'store/' }, { to: 'machines/', typesOnly: true }],
  config: [{ to: 'config/' }],
  // The composition root picks implementations for every port.
  cli: 'anything',
};

/**
 * Breaches the code has today. Each entry matches one import exactly (importer, imported file, and
 * whether it is type-only); remove the entry when the import goes. Do not add to this list to make
 * a new import pass: move the code to the layer it belongs in instead.
 */
const exceptions: readonly { from: string; to: string; typeOnly: boolean; why: string }[] = [
  {
    from: 'actors/sandbox-inspect.ts',
    to: 'providers/errors.ts',
    typeOnly: false,
    why:
      'inspectLease calls provider.describe itself (an inline describe attempt) and classifies the ' +
      'failure with classifyProviderFailure. Provider calls belong to workers/; until then the ' +
      'classification could be passed in, or the describe moved behind a worker-side function.',
  },
  {
    from: 'config/schema.ts',
    to: 'providers/simulated/fault-plan.ts',
    typeOnly: false,
    why:
      "SANDLOT_SIMULATED_FAULTS is checked at start-up with the simulated provider's own parser " +
      '(parseFaultPlan). config/ could keep the JSON text and cli/compose.ts parse it, or the plan ' +
      'schema could move into config/.',
  },
  {
    from: 'config/types.ts',
    to: 'providers/simulated/fault-plan.ts',
    typeOnly: true,
    why: 'Config.simulated.faults is typed as the parsed FaultPlan; goes with the entry above.',
  },
  {
    from: 'workers/effect-processor.ts',
    to: 'machines/environment-events.ts',
    typeOnly: true,
    why:
      'summaryOf builds the ResourceSummary that actors/attempts.ts AttemptOutcome carries into the ' +
      'provider.succeeded event. actors/ could export that type (or take a ProviderResource) instead.',
  },
];

function allowed(edge: Edge): boolean {
  const layer = layerOf(edge.from) as Layer;
  const rule = rules[layer];
  if (rule === 'anything') return true;
  return rule.some(
    (a) =>
      matches(a.to, edge.to) &&
      (a.typesOnly !== true || edge.typeOnly) &&
      (a.from === undefined || a.from.some((f) => matches(f, edge.from))),
  );
}

const isException = (edge: Edge) =>
  exceptions.some((x) => x.from === edge.from && x.to === edge.to && x.typeOnly === edge.typeOnly);

// ---------------------------------------------------------------------------------------------
// Cycles among value imports

/** One concrete cycle per strongly connected component of more than one file (or a self-import). */
function findCycles(graph: ReadonlyMap<string, readonly string[]>): string[][] {
  let counter = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const components: string[][] = [];
  const connect = (v: string): void => {
    index.set(v, counter);
    low.set(v, counter);
    counter++;
    stack.push(v);
    onStack.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!index.has(w)) {
        connect(w);
        low.set(v, Math.min(low.get(v) ?? 0, low.get(w) ?? 0));
      } else if (onStack.has(w)) {
        low.set(v, Math.min(low.get(v) ?? 0, index.get(w) ?? 0));
      }
    }
    if (low.get(v) === index.get(v)) {
      const component: string[] = [];
      let w: string | undefined;
      do {
        w = stack.pop();
        if (w === undefined) break;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      const selfLoop = (graph.get(v) ?? []).includes(v);
      if (component.length > 1 || selfLoop) components.push(component);
    }
  };
  for (const v of [...graph.keys()].sort()) if (!index.has(v)) connect(v);

  // Walk inside the component from its first file back to itself: the path to report.
  return components.map((component) => {
    const members = new Set(component);
    const start = [...component].sort()[0] ?? '';
    const previous = new Map<string, string>();
    const queue = [start];
    while (queue.length > 0) {
      const v = queue.shift() ?? '';
      for (const w of graph.get(v) ?? []) {
        if (!members.has(w)) continue;
        if (w === start) {
          const path = [start];
          for (let at: string | undefined = v; at !== undefined && at !== start; at = previous.get(at)) {
            path.splice(1, 0, at);
          }
          return [...path, start];
        }
        if (!previous.has(w)) {
          previous.set(w, v);
          queue.push(w);
        }
      }
    }
    return [...component, component[0] ?? ''];
  });
}

// ---------------------------------------------------------------------------------------------

describe('import scanner', () => {
  it('tells type-only imports from value imports', () => {
    const found = scanImports(
      [
        "import { a } from './a.ts';",
        "import type { B } from './b.ts';",
        "import { type C, type D as E } from './c.ts';",
        "import { f, type G } from './f.ts';",
        "import * as h from './h.ts';",
        "import i, { type J } from './i.ts';",
        "export { k } from './k.ts';",
        "export type { L } from './l.ts';",
        "export * from './m.ts';",
        "import './n.ts';",
        "const o = await import('./o.ts');",
        'import {',
        '  p,',
        '  type Q,',
        "} from './p.ts';",
      ].join('\n'),
    );
    expect(found.map((f) => [f.specifier, f.typeOnly])).toEqual([
      ['./a.ts', false],
      ['./b.ts', true],
      ['./c.ts', true],
      ['./f.ts', false],
      ['./h.ts', false],
      ['./i.ts', false],
      ['./k.ts', false],
      ['./l.ts', true],
      ['./m.ts', false],
      ['./n.ts', false],
      ['./o.ts', false],
      ['./p.ts', false],
    ]);
  });

  it('ignores imports in comments and strings that are not statements', () => {
    const found = scanImports(
      [
        "// import { a } from './a.ts';",
        "/* import { b } from './b.ts'; */",
        " * import { c } from './c.ts';",
        "const url = 'https://example.invalid/x'; // import { d } from './d.ts'",
        'const s = "import { e } from \'./e.ts\'";',
      ].join('\n'),
    );
    expect(found).toEqual([]);
  });

  it('reports the line of each import, comments included in the count', () => {
    const found = scanImports(['// one', '/* two', '   three */', "import { a } from './a.ts';"].join('\n'));
    expect(found.map((f) => f.line)).toEqual([4]);
  });

  it('finds a cycle and reports its path', () => {
    const graph = new Map([
      ['a.ts', ['b.ts']],
      ['b.ts', ['c.ts']],
      ['c.ts', ['a.ts', 'd.ts']],
      ['d.ts', []],
      ['e.ts', ['e.ts']],
    ]);
    expect(findCycles(graph)).toEqual([
      ['a.ts', 'b.ts', 'c.ts', 'a.ts'],
      ['e.ts', 'e.ts'],
    ]);
  });

  it('finds source files in every layer that has them', () => {
    for (const layer of ['machines', 'actors', 'store', 'http', 'config', 'cli'] as const) {
      expect(
        files.some((f) => layerOf(f) === layer),
        layer,
      ).toBe(true);
    }
    expect(files.some((f) => f.endsWith('.test.ts'))).toBe(false);
  });

  it('resolves every relative import to a file that exists', () => {
    const missing = localEdges.filter((e) => !existsSync(join(root, e.to))).map(show);
    expect(missing, 'relative imports that resolve to no file').toEqual([]);
  });
});

describe('layering', () => {
  it('has no circular value imports', () => {
    const graph = new Map<string, string[]>();
    for (const file of files) graph.set(file, []);
    for (const e of localEdges) if (!e.typeOnly) graph.get(e.from)?.push(e.to);
    const cycles = findCycles(graph).map((cycle) => cycle.join(' → '));
    expect(cycles, 'value-import cycles (break one edge, or make it `import type`)').toEqual([]);
  });

  it('imports only along the allowed layer directions', () => {
    const violations = localEdges.filter((e) => !allowed(e) && !isException(e)).map(show);
    expect(violations, 'imports that reach around a layer (see rules in this file)').toEqual([]);
  });

  it('keeps every listed exception in use (delete the entry once its import is gone)', () => {
    const stale = exceptions
      .filter((x) => !localEdges.some((e) => e.from === x.from && e.to === x.to && e.typeOnly === x.typeOnly))
      .map((x) => `${x.from} → ${x.to}`);
    expect(stale).toEqual([]);
  });

  it('lists no exception that the rules already allow', () => {
    const redundant = exceptions
      .filter((x) =>
        allowed({ from: x.from, to: x.to, typeOnly: x.typeOnly, specifier: '', line: 0, local: true }),
      )
      .map((x) => `${x.from} → ${x.to}`);
    expect(redundant).toEqual([]);
  });
});

describe('machines/ purity', () => {
  const machineFiles = files.filter((f) => layerOf(f) === 'machines');
  const builtins = new Set(builtinModules.flatMap((m) => [m, `node:${m}`]));
  /** Packages a machine may use; anything else is a question for review, not a quiet addition. */
  const machinePackages = new Set(['xstate', 'zod']);

  it('imports no Node module and no package but xstate and zod', () => {
    const bad = edges
      .filter((e) => layerOf(e.from) === 'machines' && !e.local)
      .filter((e) => e.to.startsWith('node:') || builtins.has(e.to) || !machinePackages.has(e.to))
      .map(show);
    expect(bad).toEqual([]);
  });

  it('reads no clock, no randomness and no process state', () => {
    const forbidden: readonly [RegExp, string][] = [
      [/\bDate\b/, 'Date (clock)'],
      [/\bMath\.random\b/, 'Math.random'],
      [/\bperformance\.now\b/, 'performance.now (clock)'],
      [/\bcrypto\./, 'crypto (randomness)'],
      [/\bprocess\./, 'process'],
      [/\b(setTimeout|setInterval|setImmediate)\b/, 'timers'],
      [/\bfetch\(/, 'fetch (I/O)'],
    ];
    const found: string[] = [];
    for (const file of machineFiles) {
      const lines = stripComments(readFileSync(join(root, file), 'utf8')).split('\n');
      lines.forEach((text, i) => {
        for (const [pattern, what] of forbidden)
          if (pattern.test(text)) found.push(`${file}:${i + 1} ${what}`);
      });
    }
    expect(found).toEqual([]);
  });
});

// Layering: dependencies point inwards (DESIGN.md "Layout", docs/architecture.md "Layers"), checked
// by `npm run lint:layers` over the production folders. Each layer lists what it may import; a
// type-only import (`import type`, `export type`, or every specifier marked inline `type`) binds
// nothing at run time, so some layers may name another layer's types but not call it. Known
// breaches are listed in `exceptions`, each with its reason: remove an entry when its import goes,
// and never add one to make a new import pass (move the code to the layer it belongs in instead).

/** Our source folders; an import of anything else (a package, a Node module) is not a layer edge. */
const OURS = '^(actors|bench|cli|config|formats|http|lib|machines|providers|store|test|workers)/';

/** Regex for a list of folders (`store`) or exact files (`actors/ports.ts`). */
const anyOf = (targets) =>
  targets
    .map((t) => (t.endsWith('.ts') ? `^${t.replaceAll('.', '\\.')}$` : `^${t.replace(/\/?$/, '/')}`))
    .join('|');

/**
 * One layer's rule as two forbidden rules: value imports of ours outside `values`, and type-only
 * imports of ours outside `values` and `types`. `lib/` (pure utilities) is allowed everywhere.
 */
function layer(name, { from = `^${name}/`, fromNot, values, types = [], comment }) {
  const source = fromNot === undefined ? { path: from } : { path: from, pathNot: fromNot };
  return [
    {
      name: `${name}-imports`,
      comment,
      severity: 'error',
      from: source,
      to: { path: OURS, pathNot: anyOf([...values, 'lib']), dependencyTypesNot: ['type-only'] },
    },
    {
      name: `${name}-type-imports`,
      comment: `${comment} Type-only imports may also name: ${types.join(', ') || 'nothing more'}.`,
      severity: 'error',
      from: source,
      to: { path: OURS, pathNot: anyOf([...values, ...types, 'lib']), dependencyTypes: ['type-only'] },
    },
  ];
}

const layers = [
  ...layer('machines', {
    values: ['machines'],
    comment: 'Pure machines: nothing of ours outside machines/ and lib/.',
  }),
  ...layer('lib', { values: ['lib'], comment: 'lib/ holds pure utilities: it imports nothing of ours.' }),
  // Pure data formats (the version 2 output document): no I/O, so any layer that needs one may use it.
  ...layer('formats', {
    values: ['formats', 'machines'],
    comment: 'formats/ are pure encoders and parsers: only other formats and the pure machines.',
  }),
  // Repositories; the embedded ports (grants, run selections) and the simulated provider's table
  // implement interfaces declared by the layers above, so they may name those shared types.
  // store/ may read the machines' pure definitions (the current lease states, say) so a SQL filter
  // and the machine cannot disagree.
  ...layer('store', {
    values: ['store', 'machines', 'formats'],
    types: ['actors/ports.ts', 'providers/provider.ts'],
    comment: 'store/ is the bottom layer but for the pure machines/ definitions.',
  }),
  // The immutable AgentHost configuration is read by config/ and used by the profile resolve as data:
  // actors/ may name its type (config/agenthost.ts), never call into config/.
  ...layer('actors', {
    values: ['actors', 'machines', 'store', 'formats'],
    types: ['providers/provider.ts', 'providers/build-test.ts', 'config/agenthost.ts'],
    comment: 'actors/ run machines over the store; providers are reached through attempts (workers/).',
  }),
  // Rows and the Database handle may be named as types anywhere in http/ (a type writes nothing),
  // but only the embedded admin routes and the production port adapters (http/clients) call
  // store/: a handler never writes a row itself.
  ...layer('http', {
    fromNot: '^http/(routes/admin\\.ts$|clients/)',
    values: ['http', 'actors', 'machines', 'config'],
    types: ['store', 'providers'],
    comment: 'http/ calls actors/; it never writes a row itself.',
  }),
  ...layer('http-store-adapters', {
    from: '^http/(routes/admin\\.ts$|clients/)',
    values: ['http', 'actors', 'machines', 'config', 'store'],
    types: ['providers'],
    comment: 'The embedded admin routes and the production port adapters (http/clients) call store/.',
  }),
  // workers/ parse effects with the machines' own zod schemas (never a cast).
  ...layer('workers', {
    values: ['workers', 'actors', 'machines', 'store', 'providers', 'config', 'formats'],
    comment: 'workers/ run attempts: actors/, store/, the providers, and the machine schemas they parse.',
  }),
  // The simulated provider keeps its own table in store/.
  // A provider-side port implementation (the Kubernetes Workspace storage) names the port it implements.
  ...layer('providers', {
    values: ['providers', 'store', 'formats'],
    types: ['machines', 'actors/ports.ts'],
    comment: 'providers/ implement the SandboxProvider port.',
  }),
  ...layer('config', { values: ['config'], comment: 'config/ is one schema for all settings.' }),
  // cli/ is the composition root: it picks implementations for every port, so it may import anything.
];

/**
 * Breaches the code has today, each naming the layer rule it would break. Remove an entry when its
 * import goes; do not add one to make a new import pass.
 */
const exceptions = [
  {
    rule: 'production-not-to-dev-dependency',
    from: '^cli/sandlot\\.mjs$',
    to: 'node_modules/tsx/',
    why:
      'The entry runs the TypeScript sources through tsx only in a development checkout; the import is ' +
      'guarded (a production install without tsx runs dist/), so nothing compiled depends on it.',
  },
  {
    rule: 'production-not-to-dev-dependency',
    from: '^http/routes/console-assets\\.ts$',
    to: 'node_modules/esbuild/',
    why:
      'A development checkout has no built console bundle, so the first /console/app.js bundles the ' +
      'sources with esbuild (a dynamic import); a production build carries the bundle and never ' +
      'loads esbuild, and an install with neither answers 503 console-not-built.',
  },
  {
    rule: 'config-imports',
    from: '^config/schema\\.ts$',
    to: '^providers/simulated/fault-plan\\.ts$',
    why:
      "SANDLOT_SIMULATED_FAULTS is checked at start-up with the simulated provider's own parser " +
      '(parseFaultPlan). config/ could keep the JSON text and cli/compose.ts parse it, or the plan ' +
      'schema could move into config/.',
  },
  {
    rule: 'config-type-imports',
    from: '^config/types\\.ts$',
    to: '^providers/simulated/fault-plan\\.ts$',
    why: 'Config.simulated.faults is typed as the parsed FaultPlan; goes with the entry above.',
  },
];

/**
 * A rule with its exceptions carved out. depcruise has no "except from A to B", so the rule is
 * split: the excepting file keeps the rule minus the excepted target; every other file keeps it whole.
 */
function withExceptions(rule) {
  const mine = exceptions.filter((x) => x.rule === rule.name);
  if (mine.length === 0) return [rule];
  const either = (...patterns) => patterns.filter((p) => p !== undefined).join('|');
  return [
    { ...rule, from: { ...rule.from, pathNot: either(rule.from.pathNot, ...mine.map((x) => x.from)) } },
    ...mine.map((x) => ({
      ...rule,
      name: `${rule.name}-excepted`,
      comment: `${rule.comment} Exception: ${x.why}`,
      from: { path: x.from },
      to: { ...rule.to, pathNot: either(rule.to.pathNot, x.to) },
    })),
  ];
}

export default {
  forbidden: [
    ...layers.flatMap(withExceptions),
    {
      name: 'no-circular',
      comment: 'No import cycles among our modules, type-only imports included.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'production-not-to-test',
      comment: 'Production code never imports test support (test/).',
      severity: 'error',
      from: { path: '^(actors|cli|config|formats|http|lib|machines|providers|store|workers)/' },
      to: { path: '^test/' },
    },
    {
      name: 'no-provider-implementation-in-actors-or-http',
      comment:
        'actors/ and http/ reach providers only through the SandboxProvider port ' +
        '(providers/provider.ts) and attempts run by workers/; they never import an implementation.',
      severity: 'error',
      from: { path: '^(actors|http)/' },
      to: { path: '^providers/(agent-sandbox/|simulated/|errors\\.ts$)' },
    },
    ...withExceptions({
      name: 'production-not-to-dev-dependency',
      comment:
        'Production code does not run devDependencies (vitest, ajv, yaml...): they are not installed ' +
        'with --omit=dev. Types from them are fine.',
      severity: 'error',
      from: { path: '^(actors|cli|config|formats|http|lib|machines|providers|store|workers)/' },
      to: { dependencyTypes: ['npm-dev'], dependencyTypesNot: ['type-only'] },
    }),
    {
      name: 'machines-no-node-modules',
      comment: 'Machines do no I/O: no Node module.',
      severity: 'error',
      from: { path: '^machines/' },
      to: { dependencyTypes: ['core'] },
    },
    {
      name: 'machines-only-xstate-and-zod',
      comment: 'Packages a machine may use; anything else is a question for review, not a quiet addition.',
      severity: 'error',
      from: { path: '^machines/' },
      to: {
        dependencyTypes: ['npm', 'npm-dev', 'npm-optional', 'npm-peer', 'npm-no-pkg', 'npm-unknown'],
        pathNot: '(^|/)node_modules/(xstate|zod)/',
      },
    },
    {
      name: 'not-unresolvable',
      comment: 'Every import resolves to a file or a package that exists.',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    // Tests sit beside their code in providers/; they are tests, not part of a layer.
    exclude: { path: '\\.test\\.ts$' },
    // Keep `import type` edges (the layer rules tell them apart) instead of dropping them.
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    // Resolve packages through their `exports` maps, as Node and TypeScript do.
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      mainFields: ['module', 'main', 'types', 'typings'],
    },
  },
};

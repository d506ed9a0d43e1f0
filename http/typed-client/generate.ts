// Writes the TypeScript types of the OpenAPI document: one type per component schema, and `Paths`,
// which names for every path and method its path and query parameters, its JSON body and the body of
// each answer by status. http/typed-client/client.ts types its calls with them.
//
// Generated, never edited: `npx tsx scripts/openapi-client.ts` rewrites http/typed-client/api.ts
// and the modules under http/typed-client/types/ from the document the embedded server answers,
// and a test fails while a committed file differs.

type Schema = Record<string, unknown>;

interface Parameter {
  name: string;
  in: string;
  required?: boolean;
  schema?: Schema;
}

interface Operation {
  summary?: string;
  parameters?: Parameter[];
  requestBody?: { required?: boolean; content?: Record<string, { schema?: Schema }> };
  responses?: Record<string, { content?: Record<string, { schema?: Schema }> }>;
}

export interface OpenApiDocument {
  paths: Record<string, Record<string, Operation>>;
  components?: { schemas?: Record<string, Schema> };
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;
const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

const key = (name: string) => (IDENTIFIER.test(name) ? name : JSON.stringify(name));
const literal = (value: unknown) => JSON.stringify(value);

/** The TypeScript type of one JSON Schema (the subset the zod generator emits). */
export function typeOf(schema: Schema | undefined, indent = ''): string {
  if (schema === undefined) return 'unknown';
  const ref = schema['$ref'];
  if (typeof ref === 'string') return ref.replace('#/components/schemas/', '');
  if (Array.isArray(schema['enum'])) return schema['enum'].map(literal).join(' | ');
  if ('const' in schema) return literal(schema['const']);
  for (const [keyword, joiner] of [
    ['anyOf', ' | '],
    ['oneOf', ' | '],
    ['allOf', ' & '],
  ] as const) {
    const parts = schema[keyword];
    if (Array.isArray(parts)) {
      return parts.map((part: Schema) => `(${typeOf(part, indent)})`).join(joiner) || 'unknown';
    }
  }
  const type = schema['type'];
  if (Array.isArray(type)) {
    return type.map((one: unknown) => typeOf({ ...schema, type: one }, indent)).join(' | ');
  }
  switch (type) {
    case 'string':
      return 'string';
    case 'integer':
    case 'number':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'null':
      return 'null';
    case 'array':
      return `Array<${typeOf(schema['items'] as Schema | undefined, indent)}>`;
    case 'object':
      return objectType(schema, indent);
    default:
      return 'unknown';
  }
}

function objectType(schema: Schema, indent: string): string {
  const properties = (schema['properties'] ?? {}) as Record<string, Schema>;
  const required = new Set((schema['required'] ?? []) as string[]);
  const inner = `${indent}  `;
  const lines = Object.entries(properties).map(
    ([name, property]) => `${inner}${key(name)}${required.has(name) ? '' : '?'}: ${typeOf(property, inner)};`,
  );
  const extra = schema['additionalProperties'];
  if (extra !== undefined && extra !== false) {
    lines.push(`${inner}[key: string]: ${extra === true ? 'unknown' : typeOf(extra as Schema, inner)};`);
  }
  return lines.length === 0 ? 'Record<string, never>' : `{\n${lines.join('\n')}\n${indent}}`;
}

function parametersType(parameters: readonly Parameter[], where: string, indent: string): string {
  const chosen = parameters.filter((p) => p.in === where);
  if (chosen.length === 0) return 'never';
  const lines = chosen.map(
    (p) => `${indent}  ${key(p.name)}${p.required === true ? '' : '?'}: ${typeOf(p.schema, `${indent}  `)};`,
  );
  return `{\n${lines.join('\n')}\n${indent}}`;
}

function bodyType(operation: Operation): string {
  const json = operation.requestBody?.content?.['application/json'];
  if (json !== undefined) return typeOf(json.schema, '        ');
  // A body that is not JSON (a binary upload) is sent as bytes.
  return operation.requestBody === undefined ? 'never' : 'Uint8Array';
}

function responsesType(operation: Operation, indent: string): string {
  const entries = Object.entries(operation.responses ?? {}).map(([status, response]) => {
    const content = response.content ?? {};
    const json = content['application/json'] ?? content['application/problem+json'];
    const body =
      json !== undefined
        ? typeOf(json.schema, `${indent}  `)
        : Object.keys(content).length > 0
          ? 'string'
          : 'null';
    return `${indent}  ${status}: ${body};`;
  });
  return entries.length === 0 ? 'Record<never, never>' : `{\n${entries.join('\n')}\n${indent}}`;
}

/** The folder (under http/typed-client/) the generated modules go in, beside the index `api.ts`. */
export const GENERATED_DIR = 'types';

const HEADER = [
  '// Generated from /openapi.json by scripts/openapi-client.ts; do not edit.',
  '/* eslint-disable */',
  '',
];

/** The `from` clause of a generated import (built, so compiled code names no `.ts` module itself). */
const fromModule = (specifier: string) => `from '${specifier}'`;

const slugOf = (tag: string) =>
  tag
    .split(/[^A-Za-z]+/)[0]!
    .replace(/([a-z])([A-Z])/g, '$1-$2')
    .toLowerCase();

const pascal = (slug: string) =>
  slug
    .split('-')
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join('');

/** Every component name a schema (or an operation) refers to, directly. */
function refsOf(value: unknown, into = new Set<string>()): Set<string> {
  if (Array.isArray(value)) for (const item of value) refsOf(item, into);
  else if (value !== null && typeof value === 'object') {
    for (const [name, inner] of Object.entries(value)) {
      if (name === '$ref' && typeof inner === 'string') into.add(inner.replace('#/components/schemas/', ''));
      else refsOf(inner, into);
    }
  }
  return into;
}

function operationLines(path: string, item: Record<string, Operation>): string[] {
  const out = [`  ${literal(path)}: {`];
  for (const method of METHODS) {
    const operation = item[method];
    if (operation === undefined) continue;
    const parameters = operation.parameters ?? [];
    if (operation.summary !== undefined) out.push(`    /** ${operation.summary.replaceAll('*/', '*\\/')} */`);
    out.push(
      `    ${method}: {`,
      `      path: ${parametersType(parameters, 'path', '      ')};`,
      `      query: ${parametersType(parameters, 'query', '      ')};`,
      `      body: ${bodyType(operation)};`,
      `      responses: ${responsesType(operation, '      ')};`,
      '    };',
    );
  }
  out.push('  };');
  return out;
}

/**
 * The generated modules, by file name under http/typed-client/: one per OpenAPI tag
 * (`types/<tag>.ts`: the component types only that tag's operations use, and its paths), the
 * types several tags share (`types/shared.ts`), and `api.ts`, which exports them all and `Paths`,
 * every path of the document.
 */
export function generateApiModules(doc: OpenApiDocument): Map<string, string> {
  const schemas = doc.components?.schemas ?? {};
  const tagOfOperation = (operation: Operation & { tags?: string[] }) => operation.tags?.[0] ?? 'Untagged';
  // Which tags use each schema, through its operations' refs and the refs of those schemas.
  const usedBy = new Map<string, Set<string>>();
  const pathsOf = new Map<string, string[]>();
  for (const path of Object.keys(doc.paths).sort()) {
    const item = doc.paths[path] ?? {};
    const tags = new Set(
      METHODS.flatMap((m) =>
        item[m] === undefined ? [] : [tagOfOperation(item[m] as Operation & { tags?: string[] })],
      ),
    );
    const tag = [...tags][0] ?? 'Untagged';
    pathsOf.set(tag, [...(pathsOf.get(tag) ?? []), path]);
    const pending = [...refsOf(item)];
    const seen = new Set<string>();
    while (pending.length > 0) {
      const name = pending.pop()!;
      if (seen.has(name)) continue;
      seen.add(name);
      for (const t of tags) usedBy.set(name, (usedBy.get(name) ?? new Set()).add(t));
      pending.push(...refsOf(schemas[name]));
    }
  }
  const home = (name: string) => {
    const tags = usedBy.get(name);
    return tags?.size === 1 ? slugOf([...tags][0]!) : 'shared';
  };
  const names = Object.keys(schemas).sort((a, b) => a.localeCompare(b));
  const slugs = [...new Set([...pathsOf.keys()].map(slugOf))].sort();
  const files = new Map<string, string>();
  for (const slug of ['shared', ...slugs]) {
    const own = names.filter((name) => home(name) === slug);
    const body: string[] = [];
    for (const name of own) body.push(`export type ${name} = ${typeOf(schemas[name])};`, '');
    const paths = [...pathsOf.entries()].filter(([tag]) => slugOf(tag) === slug).flatMap(([, p]) => p);
    if (slug !== 'shared') {
      body.push(`export interface ${pascal(slug)}Paths {`);
      for (const path of paths.sort()) body.push(...operationLines(path, doc.paths[path] ?? {}));
      body.push('}', '');
    }
    const text = body.join('\n');
    // Types of other modules this one names: only shared ones (a tag's own types are its alone).
    const imported = names.filter(
      (name) => home(name) !== slug && new RegExp(`(?<![\\w"$])${name}(?![\\w"$])`).test(text),
    );
    const imports =
      imported.length === 0
        ? []
        : [`import type { ${imported.join(', ')} } ${fromModule('./shared.ts')};`, ''];
    files.set(`${GENERATED_DIR}/${slug}.ts`, [...HEADER, ...imports, text].join('\n'));
  }
  const index = [...HEADER];
  for (const slug of ['shared', ...slugs])
    index.push(`export type * ${fromModule(`./${GENERATED_DIR}/${slug}.ts`)};`);
  index.push('');
  for (const slug of slugs)
    index.push(`import type { ${pascal(slug)}Paths } ${fromModule(`./${GENERATED_DIR}/${slug}.ts`)};`);
  index.push('', '/** Every path of the document, with its methods. */');
  index.push(
    `export interface Paths extends ${slugs.map((slug) => `${pascal(slug)}Paths`).join(', ')} {}`,
    '',
  );
  files.set('api.ts', index.join('\n'));
  return files;
}

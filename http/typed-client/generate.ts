// Writes the TypeScript types of the OpenAPI document: one type per component schema, and `Paths`,
// which names for every path and method its path and query parameters, its JSON body and the body of
// each answer by status. http/typed-client/client.ts types its calls with them.
//
// Generated, never edited: `npx tsx scripts/openapi-client.ts` rewrites http/typed-client/api.ts
// from the document the embedded server answers, and a test fails while the committed file differs.

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

/** The whole generated module. */
export function generateApiTypes(doc: OpenApiDocument): string {
  const out: string[] = [
    '// Generated from /openapi.json by scripts/openapi-client.ts; do not edit.',
    '/* eslint-disable */',
    '',
  ];
  for (const [name, schema] of Object.entries(doc.components?.schemas ?? {}).sort(([a], [b]) =>
    a.localeCompare(b),
  )) {
    out.push(`export type ${name} = ${typeOf(schema)};`, '');
  }
  out.push('export interface Paths {');
  for (const path of Object.keys(doc.paths).sort()) {
    out.push(`  ${literal(path)}: {`);
    const item = doc.paths[path] ?? {};
    for (const method of METHODS) {
      const operation = item[method];
      if (operation === undefined) continue;
      const parameters = operation.parameters ?? [];
      if (operation.summary !== undefined)
        out.push(`    /** ${operation.summary.replaceAll('*/', '*\\/')} */`);
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
  }
  out.push('}', '');
  return out.join('\n');
}

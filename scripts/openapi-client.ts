// Regenerates http/typed-client/api.ts, the TypeScript types of the OpenAPI document, from the
// document an embedded server answers (every route, the admin ones included).
//
//   npx tsx scripts/openapi-client.ts           rewrite the file when it is stale
//   npx tsx scripts/openapi-client.ts --check   change nothing; exit 1 when it is stale
//
// test/integration/openapi.test.ts fails while the committed file differs from the document.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { composeSandlot } from '../cli/compose.ts';
import { loadConfig } from '../config/load.ts';
import { generateApiTypes, type OpenApiDocument } from '../http/typed-client/generate.ts';

const target = new URL('../http/typed-client/api.ts', import.meta.url);
const args = process.argv.slice(2);
const check = args.includes('--check');
const unknown = args.filter((a) => a !== '--check');

async function currentDocument(): Promise<OpenApiDocument> {
  const dataDir = await mkdtemp(join(tmpdir(), 'sandlot-openapi-'));
  try {
    const config = loadConfig({ SANDLOT_DATA_DIR: dataDir });
    const sandlot = await composeSandlot(config, pino({ level: 'silent' }), { workers: false });
    try {
      const res = await sandlot.app.request('/openapi.json');
      if (res.status !== 200) throw new Error(`/openapi.json answered ${res.status}`);
      return (await res.json()) as OpenApiDocument;
    } finally {
      await sandlot.close();
    }
  } finally {
    await rm(dataDir, { recursive: true, force: true });
  }
}

async function main(): Promise<number> {
  if (unknown.length > 0) {
    process.stderr.write(
      `openapi-client: unknown argument ${unknown.join(' ')} (usage: openapi-client [--check])\n`,
    );
    return 2;
  }
  const fresh = generateApiTypes(await currentDocument());
  const committed = await readFile(target, 'utf8').catch(() => '');
  if (fresh === committed) {
    process.stdout.write('openapi-client: http/typed-client/api.ts is up to date\n');
    return 0;
  }
  if (check) {
    process.stderr.write('openapi-client: http/typed-client/api.ts is stale, run `npm run openapi-client`\n');
    return 1;
  }
  await writeFile(target, fresh);
  process.stdout.write('openapi-client: rewrote http/typed-client/api.ts\n');
  return 0;
}

process.exitCode = await main().catch((error: unknown) => {
  process.stderr.write(`openapi-client: ${error instanceof Error ? error.message : String(error)}\n`);
  return 1;
});

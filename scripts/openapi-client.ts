// Regenerates http/typed-client/api.ts and http/typed-client/types/*.ts, the TypeScript types of the
// OpenAPI document (one module per tag), from the document an embedded server answers (every
// route, the admin ones included).
//
//   npx tsx scripts/openapi-client.ts           rewrite the file when it is stale
//   npx tsx scripts/openapi-client.ts --check   change nothing; exit 1 when it is stale
//
// test/integration/typed-client.test.ts fails while a committed file differs from the document.
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { composeSandlot } from '../cli/compose.ts';
import { loadConfig } from '../config/load.ts';
import { GENERATED_DIR, generateApiModules, type OpenApiDocument } from '../http/typed-client/generate.ts';

const root = new URL('../http/typed-client/', import.meta.url);
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
  const fresh = generateApiModules(await currentDocument());
  // A module of a tag that is gone is stale too: it is removed.
  const present = await readdir(new URL(`${GENERATED_DIR}/`, root)).catch(() => [] as string[]);
  const gone = present.map((f) => `${GENERATED_DIR}/${f}`).filter((f) => !fresh.has(f));
  const stale: string[] = [...gone];
  for (const [file, text] of fresh) {
    if ((await readFile(new URL(file, root), 'utf8').catch(() => '')) !== text) stale.push(file);
  }
  if (stale.length === 0) {
    process.stdout.write(`openapi-client: http/typed-client/ is up to date (${fresh.size} files)\n`);
    return 0;
  }
  if (check) {
    process.stderr.write(
      `openapi-client: stale in http/typed-client/: ${stale.join(', ')}; run \`npm run openapi-client\`\n`,
    );
    return 1;
  }
  await mkdir(new URL(`${GENERATED_DIR}/`, root), { recursive: true });
  for (const file of gone) await rm(new URL(file, root));
  for (const file of stale.filter((f) => fresh.has(f)))
    await writeFile(new URL(file, root), fresh.get(file)!);
  process.stdout.write(`openapi-client: rewrote ${stale.join(', ')} in http/typed-client/\n`);
  return 0;
}

process.exitCode = await main().catch((error: unknown) => {
  process.stderr.write(`openapi-client: ${error instanceof Error ? error.message : String(error)}\n`);
  return 1;
});

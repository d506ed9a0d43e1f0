// Regenerates the state diagrams in README.md and docs/architecture.md from the Environment machine
// (machines/environment-diagram.ts), between their `<!-- diagram:<name>:start/end -->` markers.
//
//   npx tsx scripts/diagrams.ts           rewrite the stale blocks
//   npx tsx scripts/diagrams.ts --check   change nothing; exit 1 listing the stale documents
//
// test/unit/diagrams.test.ts fails while a committed diagram differs from the machine.
import { readFile, writeFile } from 'node:fs/promises';
import { documents, refresh } from './diagram-blocks.ts';

const root = new URL('../', import.meta.url);
const args = process.argv.slice(2);
const check = args.includes('--check');
const unknown = args.filter((a) => a !== '--check');

async function main(): Promise<number> {
  if (unknown.length > 0) {
    process.stderr.write(`diagrams: unknown argument ${unknown.join(' ')} (usage: diagrams [--check])\n`);
    return 2;
  }
  const stale: string[] = [];
  for (const document of Object.keys(documents)) {
    const file = new URL(document, root);
    const text = await readFile(file, 'utf8');
    const fresh = refresh(document, text);
    if (fresh === text) continue;
    stale.push(document);
    if (!check) await writeFile(file, fresh);
  }
  if (stale.length === 0) process.stdout.write('diagrams: up to date\n');
  else if (check) process.stderr.write(`diagrams: stale, run \`npm run diagrams\`: ${stale.join(', ')}\n`);
  else process.stdout.write(`diagrams: rewrote ${stale.join(', ')}\n`);
  return check && stale.length > 0 ? 1 : 0;
}

process.exitCode = await main().catch((error: unknown) => {
  process.stderr.write(`diagrams: ${error instanceof Error ? error.message : String(error)}\n`);
  return 1;
});

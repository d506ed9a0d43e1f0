// What a whole sandbox lifecycle writes to the log, captured from the real logger factory (JSON, as
// in production): no bearer token, dev signing key, database or Redis password or provider options
// value appears anywhere, while request IDs, environmentIds, operationIds and fences do.
import { readFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, describe, expect, it } from 'vitest';
import { describeConfig } from '../../config/describe.ts';
import { createLogger } from '../../lib/logger.ts';
import { composeEmbedded, composeProduction, runLifecycle, type Composed } from './observability-support.ts';

function capture() {
  const chunks: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      chunks.push(chunk.toString('utf8'));
      done();
    },
  });
  const logger = createLogger({ level: 'debug', destination });
  return {
    logger,
    text: () => chunks.join(''),
    lines: () =>
      chunks
        .join('')
        .split('\n')
        .filter((line) => line !== '')
        .map((line) => JSON.parse(line) as Record<string, unknown>),
  };
}

/** A token's three parts, each of which must be absent on its own too. */
const tokenParts = (token: string) => [token, ...token.split('.').filter((part) => part.length > 8)];

function expectLifecycleLines(
  lines: Record<string, unknown>[],
  result: { environmentId: string; operationId: string; requestIds: string[] },
) {
  const requests = lines.filter((l) => l['msg'] === 'request');
  for (const requestId of result.requestIds) {
    expect(
      requests.some((l) => l['requestId'] === requestId),
      requestId,
    ).toBe(true);
  }
  // Every line a request logs carries its ID; the environment's requests name it.
  expect(requests.every((l) => typeof l['requestId'] === 'string')).toBe(true);
  expect(requests.some((l) => l['environmentId'] === result.environmentId)).toBe(true);
  const attempts = lines.filter((l) => l['msg'] === 'attempt resolved' && l['kind'] !== 'describe');
  expect(attempts.map((l) => l['kind'])).toEqual(expect.arrayContaining(['provision', 'release']));
  for (const line of attempts) {
    expect(line).toMatchObject({
      environmentId: result.environmentId,
      operationId: result.operationId,
      lifecycleGeneration: 1,
      resourceGeneration: 1,
      providerFence: 1,
    });
  }
}

describe('log redaction over a full lifecycle', () => {
  const closers: (() => Promise<void>)[] = [];
  afterAll(async () => {
    for (const close of closers.reverse()) await close();
  });

  it('production: no bearer token, database or Redis password, or provider option value is written', async () => {
    const log = capture();
    const password = 'pw-Zq9xK2vLm7';
    const c: Composed = await composeProduction({ logger: log.logger, password });
    closers.push(() => c.close());
    // The composition stops (its last lines written) before the log is read; closing again is a no-op.
    const stop = () => c.sandlot.close();
    // As `sandlot serve` does at start-up; and a careless line with the raw URLs, which the logger
    // itself must strip of their credentials.
    log.logger.info({ config: describeConfig(c.config) }, 'starting sandlot');
    log.logger.info(
      {
        databaseUrl: c.config.databaseUrl,
        redisUrl: c.config.redisUrl,
        nested: { url: c.config.databaseUrl },
      },
      'careless line',
    );
    const optionsValue = 'opts-value-Hq3Ztr';
    log.logger.info({ attempt: { providerOptions: { image: optionsValue } } }, 'careless attempt line');

    const result = await runLifecycle(c);
    // Refused requests are logged too: with a bad token, and with a token as a query parameter.
    await c.request('GET', `/api/projects/checkout/runs/run-1/environments?access_token=${c.user}`, {
      headers: { authorization: `Bearer ${c.user}x` },
    });
    await stop();

    const text = log.text();
    for (const secret of [...tokenParts(c.user), ...tokenParts(c.operator), password, optionsValue]) {
      expect(text.includes(secret), 'a secret reached the log').toBe(false);
    }
    const lines = log.lines();
    const careless = lines.find((l) => l['msg'] === 'careless line');
    expect(String(careless?.['databaseUrl'])).toMatch(/^postgres:\/\/127\.0\.0\.1:5432\/test/);
    expect(careless?.['redisUrl']).toBe('redis://127.0.0.1:6379');
    expectLifecycleLines(lines, result);
    expect(text).toContain(result.environmentId);
  }, 60_000);

  it('embedded: the dev signing key and the dev tokens are never written', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'sandlot-logs-'));
    closers.push(() => rm(dir, { recursive: true, force: true }));
    const log = capture();
    const c = await composeEmbedded(log.logger, dir);
    closers.push(() => c.close());
    log.logger.info({ config: describeConfig(c.config) }, 'starting sandlot');
    const result = await runLifecycle(c);
    await c.close();

    const key = (await readFile(join(dir, 'dev-signing-key'), 'utf8')).trim();
    const text = log.text();
    for (const secret of [key, ...tokenParts(c.user), ...tokenParts(c.operator)]) {
      expect(text.includes(secret), 'a secret reached the log').toBe(false);
    }
    expectLifecycleLines(log.lines(), result);
  }, 60_000);
});

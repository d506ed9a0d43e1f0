// Shared by the workers-* integration tests: real Redis, one key prefix per test file.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { createLogger } from '../../lib/logger.ts';

const redisBase = process.env['TEST_REDIS_URL'] ?? 'redis://127.0.0.1:6379';

/** A Redis URL on logical database `db`; the relay test flushes db 5, so nobody else uses it. */
export function redisUrl(db = 0): string {
  return `${redisBase}/${db}`;
}

export function uniquePrefix(): string {
  return `sandlot-test-${randomBytes(5).toString('hex')}`;
}

export const silentLogger = createLogger({ level: 'silent' });

export async function deleteKeys(url: string, prefix: string): Promise<void> {
  const client = new Redis(url);
  try {
    let cursor = '0';
    do {
      const [next, keys] = await client.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
      if (keys.length > 0) await client.del(...keys);
      cursor = next;
    } while (cursor !== '0');
  } finally {
    client.disconnect();
  }
}

export async function waitFor(
  condition: () => boolean | Promise<boolean>,
  { timeoutMs = 10_000, intervalMs = 20, what = 'condition' } = {},
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}

export const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

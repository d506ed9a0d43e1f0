// The shutdown path `serve` and `worker` share: closers in order under one grace period, one line
// logged, exit 0 only when everything closed cleanly in time.
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { installShutdownHandlers, SHUTDOWN_GRACE_MS, type Closer } from '../../cli/shutdown.ts';
import { createLogger } from '../../lib/logger.ts';

function capture() {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) {
        if (line !== '') lines.push(JSON.parse(line) as Record<string, unknown>);
      }
      done();
    },
  });
  return { logger: createLogger({ level: 'info', destination }), lines };
}

/** Sends `signal` to the handlers and resolves with the exit code they chose. */
async function stopWith(closers: Closer[], timeoutMs?: number) {
  const { logger, lines } = capture();
  let exited: (code: number) => void = () => undefined;
  const code = new Promise<number>((resolve) => (exited = resolve));
  const uninstall = installShutdownHandlers(closers, {
    logger,
    signals: ['SIGUSR2'],
    exit: (c) => exited(c),
    ...(timeoutMs === undefined ? {} : { timeoutMs }),
  });
  try {
    process.emit('SIGUSR2', 'SIGUSR2');
    return { code: await code, lines };
  } finally {
    uninstall();
  }
}

describe('installShutdownHandlers', () => {
  it('has one grace period, below Kubernetes’ default 30 s', () => {
    expect(SHUTDOWN_GRACE_MS).toBe(25_000);
  });

  it('closes in order, logs one line and exits 0', async () => {
    const order: string[] = [];
    const closer = (name: string): Closer => ({
      name,
      close: () => Promise.resolve(void order.push(name)),
    });
    const { code, lines } = await stopWith([closer('http'), closer('sandlot')]);
    expect(code).toBe(0);
    expect(order).toEqual(['http', 'sandlot']);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      msg: 'shut down',
      signal: 'SIGUSR2',
      closed: { http: expect.any(Number) as unknown },
    });
  });

  it('exits 1 after a failed close, having run the closers after it', async () => {
    const order: string[] = [];
    const { code, lines } = await stopWith([
      { name: 'http', close: () => Promise.reject(new Error('not running')) },
      { name: 'sandlot', close: () => Promise.resolve(void order.push('sandlot')) },
    ]);
    expect(code).toBe(1);
    expect(order).toEqual(['sandlot']);
    expect(lines.map((line) => line['msg'])).toEqual([
      'close failed; continuing',
      'shut down after a failed close',
    ]);
  });

  it('exits 1 once the grace period passes, naming the closer that hung', async () => {
    // A promise that never settles and holds no handle: only the grace timer keeps the process up.
    const { code, lines } = await stopWith(
      [
        { name: 'http', close: () => Promise.resolve() },
        { name: 'sandlot', close: () => new Promise<void>(() => undefined) },
      ],
      50,
    );
    expect(code).toBe(1);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      msg: 'shutdown grace period passed; exiting',
      stuck: 'sandlot',
      closed: { http: expect.any(Number) as unknown },
    });
  });
});

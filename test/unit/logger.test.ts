// The logger factory every process uses: credentials in a logged object never reach the output.
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger, REDACTED } from '../../lib/logger.ts';

function capture(name?: string) {
  const lines: Record<string, unknown>[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString('utf8').split('\n')) {
        if (line !== '') lines.push(JSON.parse(line) as Record<string, unknown>);
      }
      done();
    },
  });
  const logger = createLogger({ level: 'info', destination, ...(name === undefined ? {} : { name }) });
  return { logger, lines };
}

describe('createLogger', () => {
  it('redacts authorization headers, cookies and tokens, and keeps everything else', () => {
    const { logger, lines } = capture('effect-queue');
    const req = {
      method: 'POST',
      headers: { authorization: 'Bearer eyJ.secret.sig', cookie: 'session=abc', host: 'api.local' },
    };
    logger.info({ req, token: 'top-token', user: { token: 'nested-token', name: 'alice' } }, 'request');

    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      name: 'effect-queue',
      msg: 'request',
      req: { method: 'POST', headers: { authorization: REDACTED, cookie: REDACTED, host: 'api.local' } },
      token: REDACTED,
      user: { token: REDACTED, name: 'alice' },
    });
    expect(JSON.stringify(lines)).not.toMatch(/eyJ|session=abc|top-token|nested-token/);
    // The object logged is left as it was.
    expect(req.headers.authorization).toBe('Bearer eyJ.secret.sig');
  });

  it('redacts *.authorization, *.password and a KubeConfig', () => {
    const { logger, lines } = capture();
    logger.warn(
      {
        upstream: { authorization: 'Basic dXNlcjpwYXNz', url: 'https://projects.local/' },
        database: { password: 'hunter2', host: 'db' },
        provider: { kubeConfig: { users: [{ token: 'sa-token' }] }, namespace: 'sandboxes' },
      },
      'call failed',
    );
    expect(lines[0]).toMatchObject({
      upstream: { authorization: REDACTED, url: 'https://projects.local/' },
      database: { password: REDACTED, host: 'db' },
      provider: { kubeConfig: REDACTED, namespace: 'sandboxes' },
    });
    expect(JSON.stringify(lines)).not.toMatch(/dXNlcjpwYXNz|hunter2|sa-token/);
  });

  it('redacts the headers an error carries', () => {
    const { logger, lines } = capture();
    const error = Object.assign(new Error('503 from upstream'), {
      headers: { authorization: 'Bearer leaked', 'content-type': 'application/json' },
    });
    logger.error({ err: error }, 'upstream failed');
    expect(lines[0]).toMatchObject({
      err: {
        message: '503 from upstream',
        headers: { authorization: REDACTED, 'content-type': 'application/json' },
      },
    });
    expect(JSON.stringify(lines)).not.toContain('Bearer leaked');
  });

  it('shows connection URLs without their user, password or secret parameters', () => {
    const { logger, lines } = capture();
    logger.info(
      {
        databaseUrl: 'postgres://sandlot:hunter2@db:5432/sandlot?sslpassword=x1',
        redisUrl: 'redis://:r3dis@redis:6379',
        client: { url: 'https://u:p4ss@projects.local/v1' },
        providerOptions: { image: 'registry.local/agenthost' },
        signingKey: 'k3y',
      },
      'connected',
    );
    expect(lines[0]).toMatchObject({
      databaseUrl: 'postgres://db:5432/sandlot?sslpassword=redacted',
      redisUrl: 'redis://redis:6379',
      client: { url: 'https://projects.local/v1' },
      providerOptions: REDACTED,
      signingKey: REDACTED,
    });
    expect(JSON.stringify(lines)).not.toMatch(/hunter2|r3dis|p4ss|k3y|registry\.local/);
  });

  it('defaults to info and honours the level it is given', () => {
    expect(createLogger().level).toBe('info');
    expect(createLogger({ level: 'silent' }).level).toBe('silent');
  });
});

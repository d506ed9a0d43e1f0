// Commits announced across processes through Redis pub/sub, so a long-poll read (`?wait=`) in an
// API process wakes within a millisecond or two of a worker's commit instead of at the next tick of
// its shared revision read (actors/wait.ts, every 100 ms). Every process that commits publishes
// "<environmentId> <revision>" after each commit; every process that serves reads subscribes. An
// announcement only prompts a re-read of PostgreSQL, so a lost one (Redis down, flushed, a message
// dropped) costs latency, never correctness: the tick still finds the commit.
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import type { CommitListener } from '../actors/runtime.ts';
import { connectRedis, type RedisTarget } from './redis.ts';

export interface ChangeFeed {
  close(): Promise<void>;
}

export interface ChangeFeedDeps {
  redis: RedisTarget;
  /** BullMQ's key prefix: the channel is `<prefix>:environment-commits`. */
  prefix: string;
  runtime: { onCommitted(listener: CommitListener): () => void };
  /** Told every announced commit (this process's own included); absent: publish only. */
  onChange?: (environmentId: string, revision: number) => void;
  logger: Logger;
}

const channelOf = (prefix: string) => `${prefix}:environment-commits`;

/** A message as published: the Environment ID, one space, the revision. */
export function parseAnnouncement(message: string): { environmentId: string; revision: number } | null {
  const space = message.indexOf(' ');
  if (space <= 0) return null;
  const revision = Number(message.slice(space + 1));
  if (!Number.isSafeInteger(revision) || revision < 1) return null;
  return { environmentId: message.slice(0, space), revision };
}

export async function startChangeFeed(deps: ChangeFeedDeps): Promise<ChangeFeed> {
  const channel = channelOf(deps.prefix);
  // Publishing fails fast (no offline queue): an announcement that cannot go now is dropped.
  const publisher = connectRedis(deps.redis, 'producer', deps.logger);
  let subscriber: Redis | null = null;
  let dropped = 0;
  const unlisten = deps.runtime.onCommitted((notice) => {
    if (notice.outcome !== 'committed') return;
    publisher.publish(channel, `${notice.environmentId} ${notice.revision}`).catch(() => {
      if (dropped++ === 0) deps.logger.debug({ channel }, 'commit announcement dropped (Redis unavailable)');
    });
  });
  if (deps.onChange !== undefined) {
    const onChange = deps.onChange;
    subscriber = connectRedis(deps.redis, 'worker', deps.logger);
    subscriber.on('message', (_channel: string, message: string) => {
      const announced = parseAnnouncement(message);
      if (announced !== null) onChange(announced.environmentId, announced.revision);
    });
    await subscriber.subscribe(channel);
  }
  return {
    async close() {
      unlisten();
      await subscriber?.quit().catch(() => subscriber?.disconnect());
      await publisher.quit().catch(() => publisher.disconnect());
    },
  };
}

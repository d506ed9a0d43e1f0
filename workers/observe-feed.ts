// Follows a provider's change feed (ProviderChangeFeed) and describes, exactly and at once, the
// Active leases whose resource finished or went away: a finished sandbox retires within a feed read
// and one describe, however many Active leases there are, instead of waiting its turn in the
// observer's passes. The feed is only a hint: what settles anything is the describe, run through
// the attempt runner like every observation; a change the feed missed is found by the observer's
// slow pass (ObserverDeps.resyncMs). Every worker process follows the feed, so two processes may
// both look at one change; the second then usually finds the lease retired and describes nothing.
import type { ProviderChangeFeed } from '../providers/provider.ts';
import { activeLeasesOfResources } from '../store/leases.ts';
import { observeLeases, type ObserverDeps } from './observer.ts';

export interface FeedFollower {
  close(): Promise<void>;
}

/** Resources looked up and described per round. */
const ROUND = 500;

export function followChangeFeed(deps: ObserverDeps, feed: ProviderChangeFeed): FeedFollower {
  const controller = new AbortController();
  const { signal } = controller;
  const pending = new Set<string>();
  let draining: Promise<void> | null = null;

  const drain = async () => {
    while (pending.size > 0 && !signal.aborted) {
      const ids = [...pending].slice(0, ROUND);
      for (const id of ids) pending.delete(id);
      try {
        const leases = await activeLeasesOfResources(deps.db, ids);
        if (leases.length > 0) await observeLeases(deps, leases, signal);
      } catch (error) {
        // The lookup failed: these changes wait for the slow pass, as a missed change would.
        deps.logger.warn({ err: error, resources: ids.length }, 'could not observe changed resources');
      }
    }
  };
  const onChange = (resourceIds: string[]) => {
    for (const id of resourceIds) pending.add(id);
    draining ??= drain().finally(() => {
      draining = null;
      // Changes that arrived as the last round ended.
      if (pending.size > 0 && !signal.aborted) onChange([]);
    });
  };
  const following = feed.followChanges(onChange, {
    signal,
    onError: (error) => deps.logger.warn({ err: error }, 'provider change feed read failed; retrying'),
  });
  deps.logger.info('following the provider change feed');
  return {
    async close() {
      controller.abort();
      await following;
      await draining;
    },
  };
}

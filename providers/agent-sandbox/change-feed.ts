// The Agent Sandbox change feed (ProviderChangeFeed), the Kubernetes way: one watch over the
// Sandboxes of the configured namespace, through client-node's Watch. A Sandbox whose Finished
// condition holds at its generation (phase.ts finishedOf), or that is being deleted or is gone, is
// reported as the resource of the SandboxClaim that controls it (`name/uid`, names.ts). Nothing here
// is evidence: the observer answers a report with an exact describe (observe.ts), which checks the
// whole chain again.
//
// A watch starts without a resourceVersion (the server first sends every current Sandbox as ADDED,
// so finished ones found at start are reported too), asks for bookmarks, and is resumed from the
// last version it saw when it ends; a version the server no longer holds (410 Expired) starts over.
// A failure waits a moment, longer each time up to 30 s, and is passed to `onError`.
import type { KubeConfig } from './client-node.ts';
import { Watch } from './client-node.ts';
import type { ProviderChangeFeed } from '../provider.ts';
import type { KubeObject } from './kube-object.ts';
import { CORE_GROUP, VERSION, resourceIdOf } from './names.ts';
import { finishedOf } from './phase.ts';
import { controllerOf } from './validate-pod.ts';
import { pause } from '../../lib/pause.ts';

export interface WatchSettings {
  /** The server ends each watch after this long, and it is resumed (default 300 s). */
  timeoutSeconds: number;
  /** First wait after a failed watch; doubles up to `maxRetryMs` (defaults 500 ms, 30 s). */
  retryMs: number;
  maxRetryMs: number;
}

export const defaultWatchSettings: WatchSettings = { timeoutSeconds: 300, retryMs: 500, maxRetryMs: 30_000 };

/** The claim resource a Sandbox event is about, if it is one a lease must learn of. */
export function changedResource(type: string, sandbox: KubeObject): string | undefined {
  const claim = controllerOf(sandbox.metadata?.ownerReferences);
  if (claim?.kind !== 'SandboxClaim' || !claim.name || !claim.uid) return undefined;
  const gone = type === 'DELETED' || sandbox.metadata?.deletionTimestamp != null;
  return gone || finishedOf(sandbox) !== undefined ? resourceIdOf(claim.name, claim.uid) : undefined;
}

class WatchEnded extends Error {}

export function sandboxChangeFeed(
  kubeConfig: KubeConfig,
  namespace: string,
  settings: WatchSettings = defaultWatchSettings,
): ProviderChangeFeed {
  const path = `/apis/${CORE_GROUP}/${VERSION}/namespaces/${encodeURIComponent(namespace)}/sandboxes`;
  return {
    async followChanges(onChange, { signal, onError }) {
      const watch = new Watch(kubeConfig);
      let version: string | undefined;
      // Finished Sandboxes already reported, so a status update of one is not reported again.
      const reported = new Set<string>();
      let wait = settings.retryMs;
      while (!signal.aborted) {
        try {
          await new Promise<void>((resolve, reject) => {
            const query: Record<string, string | number | boolean> = {
              allowWatchBookmarks: true,
              timeoutSeconds: settings.timeoutSeconds,
            };
            if (version !== undefined) query['resourceVersion'] = version;
            let controller: AbortController | undefined;
            const stop = () => controller?.abort();
            signal.addEventListener('abort', stop, { once: true });
            const finish = (error: unknown) => {
              signal.removeEventListener('abort', stop);
              if (error === null || error === undefined || signal.aborted) resolve();
              else
                reject(
                  error instanceof Error ? error : new WatchEnded(`watch ended: ${JSON.stringify(error)}`),
                );
            };
            const onEvent = (type: string, object: unknown) => {
              const sandbox = (object ?? {}) as KubeObject;
              if (type === 'ERROR') {
                const status = object as { code?: number; reason?: string; message?: string };
                controller?.abort();
                // Expired: the version is no longer held; start over from the current state (the
                // ordinary end of a long-idle watch, not a failure).
                if (status.code === 410 || status.reason === 'Expired') {
                  version = undefined;
                  finish(null);
                } else {
                  finish(new WatchEnded(`watch error ${status.code ?? ''} ${status.message ?? ''}`.trim()));
                }
                return;
              }
              const seen = sandbox.metadata?.resourceVersion;
              if (seen) version = seen;
              if (type === 'BOOKMARK') return;
              wait = settings.retryMs;
              const resourceId = changedResource(type, sandbox);
              if (type === 'DELETED') {
                if (resourceId === undefined) return;
                reported.delete(resourceId);
                onChange([resourceId]);
                return;
              }
              if (resourceId === undefined || reported.has(resourceId)) return;
              reported.add(resourceId);
              onChange([resourceId]);
            };
            watch.watch(path, query, onEvent, finish).then(
              (c) => {
                controller = c;
                if (signal.aborted) c.abort();
              },
              (error: unknown) => finish(error),
            );
          });
        } catch (error) {
          if (signal.aborted) return;
          onError?.(error);
          await pause(wait, signal);
          wait = Math.min(settings.maxRetryMs, wait * 2);
        }
      }
    },
  };
}

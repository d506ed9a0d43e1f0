// What one watch asks for (its query, checked the way the API server checks it before the stream
// opens) and the events it is owed for a store change. The filter follows the watch cache: a change
// is judged against the object before and after, so an object that stops matching the selectors is
// DELETED for this watcher (its last matching state, at the change's version) and one that starts
// matching is ADDED.
import type { StoreChange } from './change-feed.ts';
import { KubeError, badRequest } from './errors.ts';
import { apiVersionOf, type ResourceType } from './resources.ts';
import { fieldMatcher, labelMatcher } from './selectors.ts';
import { clone, type JsonObject, type KubeObject } from './types.ts';

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR';

export interface WatchEvent {
  type: WatchEventType;
  object: JsonObject;
}

export interface WatchRequest {
  resource: ResourceType;
  /** From the path; absent for a cluster-scoped kind or a watch across all namespaces. */
  namespace: string | undefined;
  /** Events after this version; undefined (no `resourceVersion`, or "0") starts with current state. */
  after: number | undefined;
  bookmarks: boolean;
  /** `timeoutSeconds` in milliseconds; undefined leaves it to the server's default. */
  timeoutMs: number | undefined;
  matches: (object: Readonly<KubeObject>) => boolean;
}

export function isWatch(query: Record<string, string>): boolean {
  return query['watch'] === 'true' || query['watch'] === '1';
}

function wholeNumber(query: Record<string, string>, name: string): number | undefined {
  const raw = query[name];
  if (raw === undefined || raw === '') return undefined;
  if (!/^\d+$/.test(raw)) throw badRequest(`invalid ${name}: "${raw}"`);
  return Number(raw);
}

/** Reads a watch's query; throws the 400 a real server answers before any event. */
export function watchRequest(
  resource: ResourceType,
  namespace: string | undefined,
  query: Record<string, string>,
): WatchRequest {
  if (query['sendInitialEvents'] !== undefined)
    throw badRequest('the fake Kubernetes API does not support sendInitialEvents (watch-list)');
  const labels = labelMatcher(query['labelSelector']);
  const fields = fieldMatcher(query['fieldSelector'], resource.kind);
  const version = wholeNumber(query, 'resourceVersion');
  const timeoutSeconds = wholeNumber(query, 'timeoutSeconds');
  return {
    resource,
    namespace,
    after: version === 0 ? undefined : version,
    bookmarks: query['allowWatchBookmarks'] === 'true' || query['allowWatchBookmarks'] === '1',
    timeoutMs: timeoutSeconds ? timeoutSeconds * 1000 : undefined,
    matches: (o) => (namespace === undefined || o.metadata.namespace === namespace) && labels(o) && fields(o),
  };
}

/** The event this watch is owed for `change`, if any: a copy of the object as a GET returns it. */
export function eventFor(watch: WatchRequest, change: StoreChange): WatchEvent | undefined {
  if (change.resource !== watch.resource) return undefined;
  const was = change.previous !== undefined && watch.matches(change.previous);
  const is = change.current !== undefined && watch.matches(change.current);
  if (is && change.current) return { type: was ? 'MODIFIED' : 'ADDED', object: clone(change.current) };
  if (!was || !change.previous) return undefined;
  const last = clone(change.previous) as KubeObject;
  last.metadata.resourceVersion = String(change.revision);
  return { type: 'DELETED', object: last };
}

export function bookmark(resource: ResourceType, revision: number): WatchEvent {
  return {
    type: 'BOOKMARK',
    object: {
      kind: resource.kind,
      apiVersion: apiVersionOf(resource),
      metadata: { resourceVersion: String(revision) },
    },
  };
}

/** What a real server sends, then ends the stream, when the version asked for is compacted away. */
export function expired(requested: number, oldest: number): WatchEvent {
  const status = new KubeError(410, 'Expired', `too old resource version: ${requested} (${oldest})`);
  return { type: 'ERROR', object: status.toStatus() };
}

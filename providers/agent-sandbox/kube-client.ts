// The adapter's only door to the API server, over client-node's generated clients (no hand-written
// HTTP). Each method takes the call's budget: its signal (aborted at the deadline too) is set on the
// request. Errors come back classified (kube-errors.ts); a 404 on an exact get is `null`, never a
// guess; a list that arrives in pages is refused, because a partial list must never pass for all.
import {
  CoreV1Api,
  CustomObjectsApi,
  NodeV1Api,
  Observable,
  type ConfigurationOptions,
  type KubeConfig,
  type ObservableMiddleware,
  type V1PersistentVolume,
  type V1PersistentVolumeClaim,
  type V1Pod,
  type V1RuntimeClass,
  type V1Service,
} from './client-node.ts';
import { uncertain } from '../errors.ts';
import type { CallOptions } from '../provider.ts';
import { requestSignal } from '../call-budget.ts';
import { budget, isAlreadyExists, isNotFound, mapKubeError, statusOf, type Verb } from './kube-errors.ts';
import { pooledApiClient } from './kube-connections.ts';
import { asObject, type KubeObject } from './kube-object.ts';
import { CILIUM_GROUP, CILIUM_VERSION, CORE_GROUP, GROUP, VERSION } from './names.ts';

export type CustomKind =
  'SandboxTemplate' | 'SandboxWarmPool' | 'SandboxClaim' | 'Sandbox' | 'CiliumNetworkPolicy';

const PLURALS: Record<CustomKind, { group: string; version: string; plural: string }> = {
  SandboxTemplate: { group: GROUP, version: VERSION, plural: 'sandboxtemplates' },
  SandboxWarmPool: { group: GROUP, version: VERSION, plural: 'sandboxwarmpools' },
  SandboxClaim: { group: GROUP, version: VERSION, plural: 'sandboxclaims' },
  Sandbox: { group: CORE_GROUP, version: VERSION, plural: 'sandboxes' },
  // Listed by the network policy verifier; created (never updated) by the writer on resume.
  CiliumNetworkPolicy: { group: CILIUM_GROUP, version: CILIUM_VERSION, plural: 'ciliumnetworkpolicies' },
};

export type CreateResult = { created: true; object: KubeObject } | { created: false };
export type DeleteResult = 'deleting' | 'absent' | 'uid-changed';
/** `conflict`: a precondition in the patch (UID, resourceVersion) no longer holds; nothing applied. */
export type PatchResult = { outcome: 'patched'; object: KubeObject } | { outcome: 'absent' | 'conflict' };

const MERGE_PATCH = 'application/merge-patch+json';

export class KubeClient {
  private readonly custom: CustomObjectsApi;
  private readonly core: CoreV1Api;
  private readonly node: NodeV1Api;

  constructor(kubeConfig: KubeConfig) {
    this.custom = pooledApiClient(kubeConfig, CustomObjectsApi);
    this.core = pooledApiClient(kubeConfig, CoreV1Api);
    this.node = pooledApiClient(kubeConfig, NodeV1Api);
  }

  getCustom(
    kind: CustomKind,
    namespace: string,
    name: string,
    call: CallOptions,
  ): Promise<KubeObject | null> {
    const { group, version, plural } = PLURALS[kind];
    return this.exact(`${kind}`, name, call, async (options) =>
      asObject(
        await this.custom.getNamespacedCustomObject({ group, version, namespace, plural, name }, options),
      ),
    );
  }

  /** `created: false` means AlreadyExists: the caller reads the object and checks it is ours. */
  async createCustom(
    kind: CustomKind,
    namespace: string,
    body: KubeObject,
    call: CallOptions,
  ): Promise<CreateResult> {
    const { group, version, plural } = PLURALS[kind];
    const what = `${kind} ${body.metadata?.name ?? ''}`;
    return this.request('create', what, call, async (options) => {
      try {
        const object: unknown = await this.custom.createNamespacedCustomObject(
          { group, version, namespace, plural, body, fieldValidation: 'Strict' },
          options,
        );
        return { created: true, object: asObject(object) };
      } catch (error) {
        if (isAlreadyExists(error)) return { created: false };
        throw error;
      }
    });
  }

  /** Every object matching `labelSelector`, from one complete (unpaged) list. */
  listCustom(
    kind: CustomKind,
    namespace: string,
    labelSelector: string,
    call: CallOptions,
  ): Promise<KubeObject[]> {
    const { group, version, plural } = PLURALS[kind];
    return this.request('list', `${kind} list`, call, async (options) => {
      const list = asObject(
        await this.custom.listNamespacedCustomObject(
          { group, version, namespace, plural, labelSelector },
          options,
        ),
      ) as { metadata?: { continue?: string; remainingItemCount?: number }; items?: unknown };
      if (
        list.metadata?.continue ||
        (list.metadata?.remainingItemCount ?? 0) > 0 ||
        !Array.isArray(list.items)
      ) {
        throw uncertain('partial-list', `Kubernetes returned a partial ${kind} list`);
      }
      return (list.items as unknown[]).map(asObject);
    });
  }

  /**
   * A JSON merge patch. Put `metadata.uid` and `metadata.resourceVersion` in it to make it
   * conditional: the API server answers 409 when either no longer matches, and applies nothing.
   */
  patchCustom(
    kind: CustomKind,
    namespace: string,
    name: string,
    body: Record<string, unknown>,
    call: CallOptions,
  ): Promise<PatchResult> {
    const { group, version, plural } = PLURALS[kind];
    return this.request(
      'patch',
      `${kind} ${name}`,
      call,
      async (options) => {
        try {
          const object: unknown = await this.custom.patchNamespacedCustomObject(
            { group, version, namespace, plural, name, body, fieldValidation: 'Strict' },
            options,
          );
          return { outcome: 'patched', object: asObject(object) };
        } catch (error) {
          if (isNotFound(error, name)) return { outcome: 'absent' };
          if (statusOf(error)?.code === 409) return { outcome: 'conflict' };
          throw error;
        }
      },
      MERGE_PATCH,
    );
  }

  /** Deletes with a UID precondition, so a same-named replacement is never deleted by mistake. */
  deleteCustom(
    kind: CustomKind,
    namespace: string,
    name: string,
    uid: string,
    propagationPolicy: 'Foreground' | 'Background',
    call: CallOptions,
  ): Promise<DeleteResult> {
    const { group, version, plural } = PLURALS[kind];
    return this.request('delete', `${kind} ${name}`, call, async (options) => {
      try {
        await this.custom.deleteNamespacedCustomObject(
          {
            group,
            version,
            namespace,
            plural,
            name,
            body: { propagationPolicy, preconditions: { uid } },
          },
          options,
        );
        return 'deleting';
      } catch (error) {
        if (isNotFound(error, name)) return 'absent';
        if (statusOf(error)?.code === 409) return 'uid-changed';
        throw error;
      }
    });
  }

  getPod(namespace: string, name: string, call: CallOptions): Promise<V1Pod | null> {
    return this.exact('Pod', name, call, (options) =>
      this.core.readNamespacedPod({ namespace, name }, options),
    );
  }

  getService(namespace: string, name: string, call: CallOptions): Promise<V1Service | null> {
    return this.exact('Service', name, call, (options) =>
      this.core.readNamespacedService({ namespace, name }, options),
    );
  }

  /** Every Pod `labelSelector` selects, from one complete (unpaged) list. */
  listPods(namespace: string, labelSelector: string, call: CallOptions): Promise<V1Pod[]> {
    return this.request('list', 'Pod list', call, async (options) => {
      const list = await this.core.listNamespacedPod({ namespace, labelSelector }, options);
      if (list.metadata?._continue || (list.metadata?.remainingItemCount ?? 0) > 0) {
        throw uncertain('partial-list', 'Kubernetes returned a partial Pod list');
      }
      return list.items;
    });
  }

  getPvc(namespace: string, name: string, call: CallOptions): Promise<V1PersistentVolumeClaim | null> {
    return this.exact('PersistentVolumeClaim', name, call, (options) =>
      this.core.readNamespacedPersistentVolumeClaim({ namespace, name }, options),
    );
  }

  getPv(name: string, call: CallOptions): Promise<V1PersistentVolume | null> {
    return this.exact('PersistentVolume', name, call, (options) =>
      this.core.readPersistentVolume({ name }, options),
    );
  }

  getRuntimeClass(name: string, call: CallOptions): Promise<V1RuntimeClass | null> {
    return this.exact('RuntimeClass', name, call, (options) => this.node.readRuntimeClass({ name }, options));
  }

  private exact<T>(
    kind: string,
    name: string,
    call: CallOptions,
    send: (o: ConfigurationOptions) => Promise<T>,
  ): Promise<T | null> {
    return this.request('read', `${kind} ${name}`, call, async (options) => {
      try {
        return await send(options);
      } catch (error) {
        if (isNotFound(error, name)) return null;
        throw error;
      }
    });
  }

  private request<T>(
    verb: Verb,
    what: string,
    call: CallOptions,
    send: (options: ConfigurationOptions) => Promise<T>,
    contentType?: string,
  ): Promise<T> {
    return kubeRequest(verb, what, call, send, contentType);
  }
}

/**
 * One API request under the call's budget: the deadline and the caller's signal are attached to the
 * fetch, and a failure says which cut it (cancelled, timed out) or what the API answered.
 */
export async function kubeRequest<T>(
  verb: Verb,
  what: string,
  call: CallOptions,
  send: (options: ConfigurationOptions) => Promise<T>,
  contentType?: string,
): Promise<T> {
  budget.check(call, `${verb} of ${what}`);
  const signal = requestSignal(call);
  try {
    return await send(withSignal(signal, contentType));
  } catch (error) {
    // The request was cut by the caller or by the deadline: say which, not "transport".
    if (call.signal.aborted) throw budget.cancelled(`${verb} of ${what}`, call.signal);
    if (signal.aborted) throw budget.timedOut(`${verb} of ${what}`, call.deadline);
    throw mapKubeError(error, verb, what);
  }
}

/**
 * Per-request options that attach `signal` to the fetch (and a Content-Type, replacing the generated
 * client's choice), keeping the configured middleware.
 */
function withSignal(signal: AbortSignal, contentType?: string): ConfigurationOptions {
  const middleware: ObservableMiddleware = {
    pre: (context) => {
      context.setSignal(signal);
      if (contentType !== undefined) context.setHeaderParam('Content-Type', contentType);
      return new Observable(Promise.resolve(context));
    },
    post: (response) => new Observable(Promise.resolve(response)),
  };
  return { middleware: [middleware], middlewareMergeStrategy: 'append' };
}

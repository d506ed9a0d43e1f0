// The BuildTest runner's requests to the API server: Pods (create, exact read, conditional annotation
// patch, UID-preconditioned delete, one container's bounded log) and NetworkPolicies (through the
// generic custom-object client, which serves any group). Errors are classified by kube-errors.ts
// exactly as the adapter's other requests; a 404 naming the object is absence, a 409 on create is
// AlreadyExists for the caller to read back, and a 409 on a preconditioned write or delete means
// the UID changed.
import type { CallOptions } from '../provider.ts';
import { CoreV1Api, CustomObjectsApi, type KubeConfig, type V1Pod } from './client-node.ts';
import { kubeRequest } from './kube-client.ts';
import { pooledApiClient } from './kube-connections.ts';
import { isAlreadyExists, isNotFound, statusOf } from './kube-errors.ts';
import { asObject, type KubeObject } from './kube-object.ts';

const POLICY = { group: 'networking.k8s.io', version: 'v1', plural: 'networkpolicies' };
const MERGE_PATCH = 'application/merge-patch+json';

export type Created<T> = { created: true; object: T } | { created: false };
export type Deleted = 'deleting' | 'absent' | 'uid-changed';

export class BuildTestKube {
  private readonly core: CoreV1Api;
  private readonly custom: CustomObjectsApi;

  constructor(kubeConfig: KubeConfig) {
    this.core = pooledApiClient(kubeConfig, CoreV1Api);
    this.custom = pooledApiClient(kubeConfig, CustomObjectsApi);
  }

  createPod(namespace: string, body: V1Pod, call: CallOptions): Promise<Created<V1Pod>> {
    return kubeRequest('create', `Pod ${body.metadata?.name ?? ''}`, call, async (options) => {
      try {
        return { created: true, object: await this.core.createNamespacedPod({ namespace, body }, options) };
      } catch (error) {
        if (isAlreadyExists(error)) return { created: false };
        throw error;
      }
    });
  }

  getPod(namespace: string, name: string, call: CallOptions): Promise<V1Pod | null> {
    return kubeRequest('read', `Pod ${name}`, call, async (options) => {
      try {
        return await this.core.readNamespacedPod({ namespace, name }, options);
      } catch (error) {
        if (isNotFound(error, name)) return null;
        throw error;
      }
    });
  }

  /**
   * One container's log (the log subresource): its last `tailLines` lines, of which the server sends
   * at most the first `limitBytes` bytes. Anything past `limitBytes` is cut here too.
   */
  readPodLog(
    namespace: string,
    name: string,
    read: { container: string; tailLines: number; limitBytes: number },
    call: CallOptions,
  ): Promise<Buffer> {
    return kubeRequest('read', `the log of Pod ${name}`, call, async (options) => {
      const text = await this.core.readNamespacedPodLog({ namespace, name, ...read }, options);
      const bytes = Buffer.from(text, 'utf8');
      return bytes.length > read.limitBytes ? bytes.subarray(0, read.limitBytes) : bytes;
    });
  }

  /**
   * A merge patch of annotations, applied only while the Pod keeps `uid` (not its resourceVersion:
   * the kubelet's status writes move that, and only the runner writes these annotations).
   */
  patchPodAnnotations(
    namespace: string,
    pod: { name: string; uid: string },
    annotations: Record<string, string>,
    call: CallOptions,
  ): Promise<'patched' | 'absent' | 'conflict'> {
    const body = { metadata: { uid: pod.uid, annotations } };
    return kubeRequest(
      'patch',
      `Pod ${pod.name}`,
      call,
      async (options) => {
        try {
          await this.core.patchNamespacedPod({ namespace, name: pod.name, body }, options);
          return 'patched';
        } catch (error) {
          if (isNotFound(error, pod.name)) return 'absent';
          if (statusOf(error)?.code === 409) return 'conflict';
          throw error;
        }
      },
      MERGE_PATCH,
    );
  }

  deletePod(namespace: string, name: string, uid: string, call: CallOptions): Promise<Deleted> {
    return kubeRequest('delete', `Pod ${name}`, call, async (options) => {
      try {
        const body = { propagationPolicy: 'Background', preconditions: { uid } };
        await this.core.deleteNamespacedPod({ namespace, name, body }, options);
        return 'deleting';
      } catch (error) {
        if (isNotFound(error, name)) return 'absent';
        if (statusOf(error)?.code === 409) return 'uid-changed';
        throw error;
      }
    });
  }

  createPolicy(namespace: string, body: KubeObject, call: CallOptions): Promise<Created<KubeObject>> {
    return kubeRequest('create', `NetworkPolicy ${body.metadata?.name ?? ''}`, call, async (options) => {
      try {
        const object: unknown = await this.custom.createNamespacedCustomObject(
          { ...POLICY, namespace, body, fieldValidation: 'Strict' },
          options,
        );
        return { created: true, object: asObject(object) };
      } catch (error) {
        if (isAlreadyExists(error)) return { created: false };
        throw error;
      }
    });
  }

  getPolicy(namespace: string, name: string, call: CallOptions): Promise<KubeObject | null> {
    return kubeRequest('read', `NetworkPolicy ${name}`, call, async (options) => {
      try {
        return asObject(await this.custom.getNamespacedCustomObject({ ...POLICY, namespace, name }, options));
      } catch (error) {
        if (isNotFound(error, name)) return null;
        throw error;
      }
    });
  }

  deletePolicy(namespace: string, name: string, uid: string, call: CallOptions): Promise<Deleted> {
    return kubeRequest('delete', `NetworkPolicy ${name}`, call, async (options) => {
      try {
        const body = { propagationPolicy: 'Background', preconditions: { uid } };
        await this.custom.deleteNamespacedCustomObject({ ...POLICY, namespace, name, body }, options);
        return 'deleting';
      } catch (error) {
        if (isNotFound(error, name)) return 'absent';
        if (statusOf(error)?.code === 409) return 'uid-changed';
        throw error;
      }
    });
  }
}

// client-node clients bound to a kubeconfig, and a helper that turns a rejected call into the
// Kubernetes Status it carried, for assertions on code/reason/causes.
import { ApiException, CoreV1Api, CustomObjectsApi, KubeConfig, NodeV1Api } from '@kubernetes/client-node';

export { PatchStrategy, setHeaderOptions } from '@kubernetes/client-node';

export interface KubeClients {
  config: KubeConfig;
  custom: CustomObjectsApi;
  core: CoreV1Api;
  node: NodeV1Api;
}

export function kubeClients(kubeconfig: string): KubeClients {
  const config = new KubeConfig();
  config.loadFromString(kubeconfig);
  return {
    config,
    custom: config.makeApiClient(CustomObjectsApi),
    core: config.makeApiClient(CoreV1Api),
    node: config.makeApiClient(NodeV1Api),
  };
}

export interface KubeStatus {
  kind?: string;
  code?: number;
  reason?: string;
  message?: string;
  details?: { name?: string; kind?: string; causes?: { field: string; reason: string; message: string }[] };
}

/** Awaits a call expected to fail with an HTTP error; returns its code and parsed Status body. */
export async function failureOf(call: Promise<unknown>): Promise<{ code: number; status: KubeStatus }> {
  try {
    await call;
  } catch (error) {
    if (!(error instanceof ApiException)) throw error;
    const body: unknown = error.body;
    const status = (typeof body === 'string' && body !== '' ? JSON.parse(body) : (body ?? {})) as KubeStatus;
    return { code: error.code, status };
  }
  throw new Error('expected the call to fail, but it succeeded');
}

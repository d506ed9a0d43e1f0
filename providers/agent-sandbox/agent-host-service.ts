// The AgentHost profile's Service, as observe.ts reads it once the Pod is placed: the Sandbox must
// report its own Service under its own name and a DNS name in the namespace, the API server must hold
// it as the Sandbox's private ClusterIP Service on 8443, and its selector must resolve to exactly the
// actual Pod (checked by listing Pods with it, as the endpoints controller selects them).
import { ownership } from '../errors.ts';
import type { CallOptions } from '../provider.ts';
import type { KubeClient } from './kube-client.ts';
import { field, type KubeObject } from './kube-object.ts';
import { assertSelectsExactly, validateAgentHostService } from './validate-agent-host.ts';

/** Where the AgentHost answers: its Service's name and DNS name. */
export interface ServicePlacement {
  service: string;
  serviceDns: string;
}

const DNS_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;

/**
 * The profile's Service as the Sandbox reports and the API server holds it, or a `pending` reason
 * while the controller has not made or reported it yet. Anything present but wrong is refused.
 */
export async function agentHostService(
  kube: KubeClient,
  namespace: string,
  sandbox: KubeObject,
  ids: { sandbox: string; sandboxUid: string; pod: string; podUid: string },
  call: CallOptions,
): Promise<ServicePlacement | { pending: string }> {
  const reported = field(sandbox.status, 'service');
  const fqdn = field(sandbox.status, 'serviceFQDN');
  if (reported === undefined || reported === '') {
    return { pending: `Sandbox ${ids.sandbox} reports no Service yet` };
  }
  if (
    reported !== ids.sandbox ||
    typeof fqdn !== 'string' ||
    fqdn.length > 253 ||
    !fqdn.startsWith(`${ids.sandbox}.${namespace}.svc.`) ||
    !DNS_NAME.test(fqdn)
  ) {
    throw ownership(
      'service-mismatch',
      `Sandbox ${ids.sandbox} reports Service ${JSON.stringify(reported)} at ${JSON.stringify(fqdn)}`,
    );
  }
  const service = await kube.getService(namespace, ids.sandbox, call);
  if (service === null) return { pending: `Service ${ids.sandbox} does not exist yet` };
  const selector = validateAgentHostService(service, { name: ids.sandbox, uid: ids.sandboxUid });
  const selected = await kube.listPods(namespace, selector, call);
  assertSelectsExactly(selected, { name: ids.pod, uid: ids.podUid }, selector);
  return { service: ids.sandbox, serviceDns: fqdn };
}

// Label and annotation keys agent-sandbox's controllers stamp on the objects they manage.
export const SANDBOX_NAME_HASH = 'agents.x-k8s.io/sandbox-name-hash';
export const CLAIM_UID = 'agents.x-k8s.io/claim-uid';
export const LAUNCH_TYPE = 'agents.x-k8s.io/launch-type';
export const TEMPLATE_REF_HASH = 'agents.x-k8s.io/sandbox-template-ref-hash';
export const TEMPLATE_REF_ANNOTATION = 'agents.x-k8s.io/sandbox-template-ref';

/** Keys a user-supplied pod template may not set on the Pod. */
export function isSystemKey(key: string): boolean {
  return key.startsWith('agents.x-k8s.io/') || key.startsWith('extensions.agents.x-k8s.io/');
}

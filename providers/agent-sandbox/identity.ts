// What this adapter advertises to admission: the selection must name exactly this provider, version,
// options schema and revision, with these capabilities.
import type { ProviderIdentity } from '../provider.ts';

export const AGENT_SANDBOX_PROVIDER_ID = 'agent-sandbox';
export const AGENT_SANDBOX_ADAPTER_VERSION = '1.0.0';

export function agentSandboxIdentity(optionsRevision: string): ProviderIdentity {
  return {
    providerId: AGENT_SANDBOX_PROVIDER_ID,
    adapterVersion: AGENT_SANDBOX_ADAPTER_VERSION,
    optionsSchemaVersion: 2,
    optionsRevision,
    hostingPattern: 'kubernetes-agent-sandbox',
    capabilities: ['pvc-attachment', 'vm-isolation'],
  };
}

import type { ProviderIdentity } from '../provider.ts';

export function simulatedIdentity(optionsRevision: string): ProviderIdentity {
  return {
    providerId: 'simulated',
    adapterVersion: '1.0.0',
    optionsSchemaVersion: 1,
    optionsRevision,
    hostingPattern: 'in-process',
    capabilities: ['pvc-attachment', 'vm-isolation'],
  };
}

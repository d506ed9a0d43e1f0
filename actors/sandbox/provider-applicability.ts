// Which isolation checks a provider's sandboxes can be held to, from the capabilities its identity
// advertises. A check that does not apply is reported as not applicable, never as failed and never
// asked of a port that has nothing to say about such a sandbox:
// - the Workspace storage readback (the pinned PVC and its PV) needs `pvc-attachment`: a provider
//   that attaches no volume has no storage of the Workspace to read back;
// - the network policy verification and the AgentHost handshake need `vm-isolation`: a provider
//   without a guest has no Pod network for a policy to select and runs no AgentHost. The handshake
//   is not asked of it, but its readiness still needs the configured phase: its own describe must
//   report it (actors/sandbox/readiness.ts).
// Admission's run selection still names exactly these capabilities (selectProvider compares them as
// a set), so a selection that requires a check never admits a provider without it.
import type { ProviderIdentity } from '../../providers/provider.ts';

export interface ProviderApplicability {
  workspaceStorage: boolean;
  networkPolicy: boolean;
  agentHost: boolean;
}

/** The capability each check needs, for messages that name what the provider does not advertise. */
export const requiredCapability = {
  workspaceStorage: 'pvc-attachment',
  networkPolicy: 'vm-isolation',
  agentHost: 'vm-isolation',
} as const satisfies Record<keyof ProviderApplicability, string>;

export function providerApplicability(
  identity: Pick<ProviderIdentity, 'capabilities'>,
): ProviderApplicability {
  const has = (capability: string) => identity.capabilities.includes(capability);
  return {
    workspaceStorage: has(requiredCapability.workspaceStorage),
    networkPolicy: has(requiredCapability.networkPolicy),
    agentHost: has(requiredCapability.agentHost),
  };
}

const everyCheck: ProviderApplicability = { workspaceStorage: true, networkPolicy: true, agentHost: true };

/**
 * The applicability of the provider a lease was admitted for, from the identity the lease froze
 * (`providerIdentity`, written from the configured identity at reservation). An identity without a
 * providerId and a list of string capabilities is not one Sandlot wrote: every check then applies,
 * the strictest reading, never a check skipped on a guess.
 */
export function recordedApplicability(recorded: Readonly<Record<string, unknown>>): {
  providerId: string;
  applies: ProviderApplicability;
} {
  const { providerId, capabilities } = recorded;
  if (
    typeof providerId !== 'string' ||
    !Array.isArray(capabilities) ||
    !capabilities.every((c): c is string => typeof c === 'string')
  ) {
    return { providerId: typeof providerId === 'string' ? providerId : 'unknown', applies: everyCheck };
  }
  return { providerId, applies: providerApplicability({ capabilities }) };
}

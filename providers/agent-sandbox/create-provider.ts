// Composition helpers: settings from the environment, a KubeConfig from KUBECONFIG or the in-cluster
// service account (token re-read from its file, CA from its file), and the provider (and the Cilium
// network policy verifier) built from both.
import { CiliumNetworkPolicyWriter } from './cilium-writer.ts';
import { KubeConfig } from './client-node.ts';
import { AgentSandboxProvider } from './agent-sandbox-provider.ts';
import { KubernetesWorkspaceStorage } from '../workspace-storage/kubernetes-storage.ts';
import { CiliumNetworkPolicyVerifier } from './cilium-verifier.ts';
import { loadAgentSandboxOptions, type KubernetesConnection } from './options.ts';

export function kubeConfigFor(connection: KubernetesConnection): KubeConfig {
  const kubeConfig = new KubeConfig();
  if (connection.kind === 'kubeconfig') {
    kubeConfig.loadFromFile(connection.path);
    return kubeConfig;
  }
  kubeConfig.loadFromClusterAndUser(
    { name: 'in-cluster', server: connection.server, caFile: connection.caFile, skipTLSVerify: false },
    {
      name: 'service-account',
      authProvider: { name: 'tokenFile', config: { tokenFile: connection.tokenFile } },
    },
  );
  return kubeConfig;
}

/**
 * The provider as `cli/compose.ts` builds it: throws AgentSandboxOptionsError naming every bad
 * variable, or ClusterTrustError when the cluster is not reached over verified HTTPS with a CA to pin.
 */
export function createAgentSandboxProvider(
  env: Readonly<Record<string, string | undefined>>,
): AgentSandboxProvider {
  const options = loadAgentSandboxOptions(env);
  return new AgentSandboxProvider({ options, kubeConfig: kubeConfigFor(options.connection) });
}

/**
 * The provider and the network policy verifier over one KubeConfig and one set of settings, so the
 * policies are read from the cluster and namespace the Pods run in. Throws as above.
 */
export function createAgentSandbox(env: Readonly<Record<string, string | undefined>>): {
  provider: AgentSandboxProvider;
  networkPolicies: CiliumNetworkPolicyVerifier;
  workspaceStorage: KubernetesWorkspaceStorage;
  networkPolicyWriter: CiliumNetworkPolicyWriter;
  /** The settings pin an AgentHost launch profile: every Sandbox runs a Host to be reached. */
  launchesAgentHost: boolean;
} {
  const options = loadAgentSandboxOptions(env);
  const kubeConfig = kubeConfigFor(options.connection);
  return {
    launchesAgentHost: options.agentHost !== undefined,
    provider: new AgentSandboxProvider({ options, kubeConfig }),
    networkPolicies: new CiliumNetworkPolicyVerifier({ options, kubeConfig }),
    // Workspace PVCs and their PVs are read back where each lease's objects live (its snapshot).
    workspaceStorage: new KubernetesWorkspaceStorage({ options, kubeConfig }),
    // Resume copies the accepted rules to the next generation in the same namespace.
    networkPolicyWriter: new CiliumNetworkPolicyWriter({ options, kubeConfig }),
  };
}

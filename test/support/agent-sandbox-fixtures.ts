// Settings fixtures shared by the adapter's tests: a complete, valid environment to vary.

export const DIGEST = 'a'.repeat(64);
export const P = 'SANDLOT_AGENT_SANDBOX_';

export function validEnv(
  overrides: Record<string, string | undefined> = {},
): Record<string, string | undefined> {
  return {
    [`${P}OPTIONS_SCHEMA_VERSION`]: '2',
    [`${P}OPTIONS_REVISION`]: 'rev-2024.06_1',
    [`${P}NAMESPACE`]: 'sandboxes',
    [`${P}WORKSPACE_STORAGE_PROVIDER_ID`]: 'azure-files-csi',
    [`${P}CONTAINER_IMAGE`]: `registry.example.com/agenthost@sha256:${DIGEST}`,
    [`${P}CONTAINER_IMAGE_PLATFORM`]: 'linux/amd64',
    [`${P}CONTAINER_IMAGE_COMPRESSED_PULL_BYTES`]: '734003200',
    [`${P}RUNTIME_CLASS_NAME`]: 'kata-vm-isolation',
    [`${P}EXPECTED_RUNTIME_HANDLER`]: 'kata',
    [`${P}CPU_REQUEST`]: '500m',
    [`${P}MEMORY_REQUEST`]: '2Gi',
    [`${P}RECONCILIATION_TIMEOUT_SECONDS`]: '120',
    [`${P}POLL_INTERVAL_MILLISECONDS`]: '250',
    KUBECONFIG: '/etc/sandlot/kubeconfig',
    ...overrides,
  };
}

// A kubeconfig for the fake: one cluster pinned to the fake's CA, one bearer-token user, one context.
import { stringify } from 'yaml';

export interface KubeconfigInput {
  server: string;
  caPem: string;
  token: string;
  namespace: string;
}

export function renderKubeconfig(input: KubeconfigInput): string {
  return stringify({
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [
      {
        name: 'fake-kube-api',
        cluster: {
          server: input.server,
          'certificate-authority-data': Buffer.from(input.caPem).toString('base64'),
        },
      },
    ],
    users: [{ name: 'fake-kube-api-user', user: { token: input.token } }],
    contexts: [
      {
        name: 'fake-kube-api',
        context: { cluster: 'fake-kube-api', user: 'fake-kube-api-user', namespace: input.namespace },
      },
    ],
    'current-context': 'fake-kube-api',
  });
}

// How the adapter reaches the API server: one kubeconfig file (KUBECONFIG), or a service account:
// the API server SANDLOT_KUBERNETES_API_SERVER (default https://kubernetes.default.svc/), the token
// file SANDLOT_KUBERNETES_SERVICE_ACCOUNT_TOKEN_FILE and the CA file
// SANDLOT_KUBERNETES_CERTIFICATE_AUTHORITY_FILE, both defaulting to the projected in-cluster paths.
// Only verified HTTPS is accepted (the cluster pin is the CA set, cluster-pin.ts); KUBECONFIG and
// these settings together are refused, so there is one way to the cluster, never a guess between two.
// Only the paths are read here: the token's bytes are never loaded, shown or logged.
export const KUBERNETES_PREFIX = 'SANDLOT_KUBERNETES_';
export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';
export const DEFAULT_API_SERVER = 'https://kubernetes.default.svc/';
export const DEFAULT_TOKEN_FILE = `${SERVICE_ACCOUNT_DIR}/token`;
export const DEFAULT_CA_FILE = `${SERVICE_ACCOUNT_DIR}/ca.crt`;

const API_SERVER = `${KUBERNETES_PREFIX}API_SERVER`;
const TOKEN_FILE = `${KUBERNETES_PREFIX}SERVICE_ACCOUNT_TOKEN_FILE`;
const CA_FILE = `${KUBERNETES_PREFIX}CERTIFICATE_AUTHORITY_FILE`;

export type KubernetesConnection =
  | { kind: 'kubeconfig'; path: string }
  /** `server` without a trailing `/`: client-node appends paths that start with one. */
  | { kind: 'in-cluster'; server: string; tokenFile: string; caFile: string };

type Env = Readonly<Record<string, string | undefined>>;
/** One bad variable (options.ts's OptionsProblem). */
type Problem = { variable: string; reason: string };

/** The API server's URL, or a problem that never repeats the value (it may carry a password). */
function apiServerOf(value: string): string | { problem: string } {
  const problem = { problem: 'expected an https:// URL without credentials, query or fragment' };
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return problem;
  }
  if (url.protocol !== 'https:' || url.hostname === '') return problem;
  if (url.username !== '' || url.password !== '' || url.search !== '' || url.hash !== '') return problem;
  return url.href.replace(/\/+$/, '');
}

export function connectionOf(
  env: Env,
  exists: (path: string) => boolean,
  problems: Problem[],
): KubernetesConnection | undefined {
  const value = (name: string) => (env[name]?.trim() === '' ? undefined : env[name]?.trim());
  if (value('NODE_TLS_REJECT_UNAUTHORIZED') === '0') {
    problems.push({ variable: 'NODE_TLS_REJECT_UNAUTHORIZED', reason: 'disables TLS validation; unset it' });
  }
  const explicit = { server: value(API_SERVER), tokenFile: value(TOKEN_FILE), caFile: value(CA_FILE) };
  const kubeconfig = value('KUBECONFIG');
  if (kubeconfig !== undefined) {
    const beside = [API_SERVER, TOKEN_FILE, CA_FILE].filter((name) => value(name) !== undefined);
    for (const variable of beside) {
      problems.push({ variable, reason: 'set with KUBECONFIG; use one or the other' });
    }
    if (kubeconfig.includes(':')) problems.push({ variable: 'KUBECONFIG', reason: 'expected one file path' });
    else if (!exists(kubeconfig)) problems.push({ variable: 'KUBECONFIG', reason: 'file not found' });
    else if (beside.length === 0) return { kind: 'kubeconfig', path: kubeconfig };
    return undefined;
  }
  const server = apiServerOf(explicit.server ?? DEFAULT_API_SERVER);
  if (typeof server !== 'string') problems.push({ variable: API_SERVER, reason: server.problem });
  const tokenFile = explicit.tokenFile ?? DEFAULT_TOKEN_FILE;
  const caFile = explicit.caFile ?? DEFAULT_CA_FILE;
  const files = [
    { variable: TOKEN_FILE, path: tokenFile, set: explicit.tokenFile !== undefined },
    { variable: CA_FILE, path: caFile, set: explicit.caFile !== undefined },
  ];
  const missing = files.filter((file) => !exists(file.path));
  if (missing.length > 0 && Object.values(explicit).every((v) => v === undefined)) {
    // Nothing was set and the projected files are absent: this process is not in a cluster.
    problems.push({
      variable: 'KUBECONFIG',
      reason:
        `set KUBECONFIG, or run in a cluster (${missing.map((f) => f.path).join(' and ')} missing), ` +
        `or set ${TOKEN_FILE} and ${CA_FILE} (and ${API_SERVER})`,
    });
    return undefined;
  }
  for (const file of missing) {
    problems.push({
      variable: file.variable,
      reason: `file not found: ${file.path}${file.set ? '' : ' (the in-cluster default)'}`,
    });
  }
  if (typeof server !== 'string' || missing.length > 0) return undefined;
  return { kind: 'in-cluster', server, tokenFile, caFile };
}

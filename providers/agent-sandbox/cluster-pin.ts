// The cluster pin: which Kubernetes cluster a lease's objects live in, as a digest of the API server's
// trusted CA set. It is independent of PEM whitespace, certificate order and the API address, so the
// same cluster reached by another name pins the same, and a different CA never does. A lease records
// the pin in its options snapshot; every call refuses to act when the live cluster pins differently.
import { createHash, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { uncertain } from '../errors.ts';
import type { Cluster, KubeConfig } from './client-node.ts';

const DOMAIN = Buffer.from('agentweaver.cluster-identity.v1\0cluster-ca\0', 'utf8');
const PEM_BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----([\s\S]*?)-----END \1-----/g;

export class ClusterTrustError extends Error {
  override readonly name = 'ClusterTrustError';
  readonly code = 'CLUSTER_TRUST_INVALID';
}

/** Every certificate of the bundles, as validated DER (X509Certificate.raw). */
export function certificatesOf(caBundlePem: string | string[]): Buffer[] {
  const bundles = Array.isArray(caBundlePem) ? caBundlePem : [caBundlePem];
  const ders: Buffer[] = [];
  for (const bundle of bundles) {
    const begins = bundle.match(/-----BEGIN /g)?.length ?? 0;
    let blocks = 0;
    for (const match of bundle.matchAll(PEM_BLOCK)) {
      blocks += 1;
      if (match[1] !== 'CERTIFICATE') continue;
      const der = Buffer.from((match[2] ?? '').replace(/\s+/g, ''), 'base64');
      try {
        ders.push(Buffer.from(new X509Certificate(der).raw));
      } catch (error) {
        throw new ClusterTrustError('the CA bundle holds a certificate that does not parse', {
          cause: error,
        });
      }
    }
    if (blocks !== begins) throw new ClusterTrustError('the CA bundle has an unterminated PEM block');
  }
  if (ders.length === 0) throw new ClusterTrustError('the CA bundle holds no certificate');
  return ders;
}

/** Lower-case SHA-256 over the deduplicated, bytewise-sorted, length-prefixed DER certificates. */
export function clusterPin(caBundlePem: string | string[]): string {
  const unique = new Map<string, Buffer>();
  for (const der of certificatesOf(caBundlePem)) unique.set(der.toString('base64'), der);
  const sorted = [...unique.values()].sort((a, b) => Buffer.compare(a, b));
  const hash = createHash('sha256').update(DOMAIN);
  for (const der of sorted) {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(der.length);
    hash.update(length).update(der);
  }
  return hash.digest('hex');
}

/** Refuses what would weaken TLS: a non-HTTPS server, skipped verification, no CA to pin. */
export function assertTrustedCluster(cluster: Cluster | null): Cluster {
  if (cluster === null) throw new ClusterTrustError('the kubeconfig selects no cluster');
  let url: URL;
  try {
    url = new URL(cluster.server);
  } catch {
    throw new ClusterTrustError(`cluster ${cluster.name} has no valid server URL`);
  }
  if (url.protocol !== 'https:') {
    throw new ClusterTrustError(`cluster ${cluster.name} is not served over https:// (${url.protocol})`);
  }
  if (cluster.skipTLSVerify) {
    throw new ClusterTrustError(`cluster ${cluster.name} sets insecure-skip-tls-verify`);
  }
  if (!cluster.caFile && !cluster.caData) {
    throw new ClusterTrustError(
      `cluster ${cluster.name} names no certificate-authority or certificate-authority-data to pin`,
    );
  }
  return cluster;
}

/**
 * The pin of the cluster a KubeConfig talks to, read from the same CA source its TLS uses (the file,
 * re-read on every call so a rotated service-account CA is seen, else the inline data).
 */
export function clusterPinOf(kubeConfig: KubeConfig): string {
  const cluster = assertTrustedCluster(kubeConfig.getCurrentCluster());
  let pem: string;
  try {
    pem = cluster.caFile
      ? readFileSync(cluster.caFile, 'utf8')
      : Buffer.from(cluster.caData ?? '', 'base64').toString('utf8');
  } catch (error) {
    throw new ClusterTrustError(`cannot read the CA of cluster ${cluster.name}`, { cause: error });
  }
  // The CA is read afresh every time, but parsing it only when its bytes changed: every provider
  // call checks the live pin, and parsing the certificates was most of that check's cost.
  if (lastPin?.pem !== pem) lastPin = { pem, pin: clusterPin(pem) };
  return lastPin.pin;
}

/** The pin of the CA bytes last read (one entry: a process talks to one cluster, or a few in turn). */
let lastPin: { pem: string; pin: string } | undefined;

/**
 * The live pin, for a check made now on behalf of a lease: its CA read afresh. A CA that cannot be
 * read or trusted at this moment makes the check impossible, never a verdict either way, so it is an
 * uncertain `cluster-pin-unavailable`.
 */
export function livePinOf(kubeConfig: KubeConfig): string {
  try {
    return clusterPinOf(kubeConfig);
  } catch (error) {
    throw uncertain('cluster-pin-unavailable', 'The live cluster pin cannot be computed', error);
  }
}

/** A pin as messages name it: enough hex digits to tell two clusters apart, never the whole. */
export const shortPin = (pin: string) => `${pin.slice(0, 12)}…`;

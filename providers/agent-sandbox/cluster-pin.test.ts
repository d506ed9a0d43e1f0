import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from './client-node.ts';
import { beforeAll, describe, expect, it } from 'vitest';
import { certificatesOf, clusterPin, clusterPinOf, ClusterTrustError } from './cluster-pin.ts';

/** A throwaway self-signed CA certificate (PEM), made with the openssl command line. */
function selfSigned(name: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'ca-'));
  const out = join(dir, 'ca.pem');
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:P-256',
      '-nodes',
      '-keyout',
      join(dir, 'key.pem'),
      '-out',
      out,
      '-subj',
      `/CN=${name}`,
      '-days',
      '1',
    ],
    { stdio: 'ignore' },
  );
  return readFileSync(out, 'utf8');
}

/** The same certificate re-wrapped: CRLF line ends, 76-column lines, blank lines and indentation. */
function respaced(pem: string): string {
  const body = pem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, '');
  const lines = body.match(/.{1,76}/g) ?? [];
  return `\r\n  -----BEGIN CERTIFICATE-----\r\n${lines.join('\r\n')}\r\n\r\n-----END CERTIFICATE-----  \r\n`;
}

function kubeConfigWith(cluster: Record<string, unknown>): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: 'https://127.0.0.1:6443', skipTLSVerify: false, ...cluster }],
    users: [{ name: 'u', token: 't' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return kc;
}

describe('clusterPin', () => {
  let a: string;
  let b: string;
  let c: string;

  beforeAll(() => {
    [a, b, c] = [selfSigned('ca-a'), selfSigned('ca-b'), selfSigned('ca-c')];
  });

  it('is a lower-case SHA-256 over the domain prefix and the length-prefixed, sorted DER set', () => {
    const ders = [...certificatesOf([a, b])].sort((x, y) => Buffer.compare(x, y));
    const expected = createHash('sha256').update('agentweaver.cluster-identity.v1\0cluster-ca\0');
    for (const der of ders) {
      const length = Buffer.alloc(4);
      length.writeUInt32BE(der.length);
      expected.update(length).update(der);
    }
    expect(clusterPin(a + b)).toBe(expected.digest('hex'));
    expect(clusterPin(a)).toMatch(/^[0-9a-f]{64}$/);
  });

  it('does not depend on certificate order, PEM spacing or how the bundle is split', () => {
    const pin = clusterPin(`${a}${b}`);
    expect(clusterPin(`${b}${a}`)).toBe(pin);
    expect(clusterPin(`${respaced(b)}\n# a comment\n${respaced(a)}`)).toBe(pin);
    expect(clusterPin([b, a])).toBe(pin);
  });

  it('ignores duplicate certificates', () => {
    expect(clusterPin([a, b, respaced(a), a])).toBe(clusterPin([a, b]));
  });

  it('differs for a different CA set', () => {
    expect(clusterPin(a)).not.toBe(clusterPin(b));
    expect(clusterPin([a, b])).not.toBe(clusterPin([a, c]));
    expect(clusterPin([a, b])).not.toBe(clusterPin(a));
  });

  it('refuses a bundle with no certificate, a broken one, or an unterminated block', () => {
    expect(() => clusterPin('')).toThrow(ClusterTrustError);
    expect(() => clusterPin('-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----')).toThrow(
      ClusterTrustError,
    );
    expect(() => clusterPin(a.replace('-----END CERTIFICATE-----', ''))).toThrow(ClusterTrustError);
  });

  it('is read from a kubeconfig CA file or inline data, independent of the API address', () => {
    const dir = mkdtempSync(join(tmpdir(), 'pin-'));
    const file = join(dir, 'ca.crt');
    writeFileSync(file, respaced(a));
    const inline = kubeConfigWith({ caData: Buffer.from(a).toString('base64') });
    const fromFile = kubeConfigWith({ caFile: file, server: 'https://kubernetes.default.svc' });
    expect(clusterPinOf(inline)).toBe(clusterPin(a));
    expect(clusterPinOf(fromFile)).toBe(clusterPin(a));
  });

  it('refuses http://, insecure-skip-tls-verify and a cluster with no CA to pin', () => {
    const caData = Buffer.from(a).toString('base64');
    expect(() => clusterPinOf(kubeConfigWith({ caData, server: 'http://127.0.0.1:8080' }))).toThrow(/https/);
    expect(() => clusterPinOf(kubeConfigWith({ caData, skipTLSVerify: true }))).toThrow(
      /insecure-skip-tls-verify/,
    );
    expect(() => clusterPinOf(kubeConfigWith({}))).toThrow(/certificate-authority/);
  });
});

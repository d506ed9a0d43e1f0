// Throwaway certificate authorities made at test start: a CA issues server certificates for the DNS
// names a test asks for, so a client verifying a hostname (not an IP) is checked for real, and a
// second, unrelated CA gives certificates a client pinned to the first must refuse. The same CA
// issues clientAuth leaves for mutual TLS (a sandbox host), each with the fingerprint it is known by.
import { createHash, webcrypto } from 'node:crypto';
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';

x509.cryptoProvider.set(webcrypto);

const ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };
const HOUR = 3600_000;

export interface ServerCertificate {
  certPem: string;
  keyPem: string;
}

export interface ClientCertificate {
  certPem: string;
  keyPem: string;
  /** Lower-case hex SHA-256 of the certificate's DER: what a directory of enrolled hosts keys on. */
  fingerprint: string;
}

export interface TestCertificateAuthority {
  caPem: string;
  /** A serverAuth leaf for exactly these DNS names (no IP address: clients must check names). */
  issue(dnsNames: readonly string[]): Promise<ServerCertificate>;
  /** A clientAuth leaf (a sandbox host's identity) with this common name. */
  issueClient(commonName: string): Promise<ClientCertificate>;
}

function keyPair(): Promise<webcrypto.CryptoKeyPair> {
  return webcrypto.subtle.generateKey(ALGORITHM, true, ['sign', 'verify']);
}

async function privateKeyPem(key: webcrypto.CryptoKey): Promise<string> {
  return x509.PemConverter.encode(await webcrypto.subtle.exportKey('pkcs8', key), 'PRIVATE KEY');
}

export async function createTestCertificateAuthority(commonName: string): Promise<TestCertificateAuthority> {
  const notBefore = new Date(Date.now() - 60_000);
  const notAfter = new Date(Date.now() + 24 * HOUR);
  const caKeys = await keyPair();
  const ca = await x509.X509CertificateGenerator.createSelfSigned({
    name: `CN=${commonName}`,
    keys: caKeys,
    notBefore,
    notAfter,
    signingAlgorithm: ALGORITHM,
    extensions: [
      new x509.BasicConstraintsExtension(true, undefined, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
      await x509.SubjectKeyIdentifierExtension.create(caKeys.publicKey),
    ],
  });

  /** One leaf signed by this CA: the parts every leaf shares, then its usage and any extensions. */
  async function leaf(
    commonName: string,
    usage: x509.ExtendedKeyUsage,
    more: x509.Extension[] = [],
  ): Promise<{ cert: x509.X509Certificate; keyPem: string }> {
    const keys = await keyPair();
    const cert = await x509.X509CertificateGenerator.create({
      subject: `CN=${commonName}`,
      issuer: ca.subject,
      publicKey: keys.publicKey,
      signingKey: caKeys.privateKey,
      notBefore,
      notAfter,
      signingAlgorithm: ALGORITHM,
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
        new x509.ExtendedKeyUsageExtension([usage]),
        ...more,
        await x509.AuthorityKeyIdentifierExtension.create(caKeys.publicKey),
      ],
    });
    return { cert, keyPem: await privateKeyPem(keys.privateKey) };
  }

  async function issue(dnsNames: readonly string[]): Promise<ServerCertificate> {
    const { cert, keyPem } = await leaf(dnsNames[0] ?? 'server', x509.ExtendedKeyUsage.serverAuth, [
      new x509.SubjectAlternativeNameExtension(dnsNames.map((value) => ({ type: 'dns', value }))),
    ]);
    return { certPem: cert.toString('pem'), keyPem };
  }

  async function issueClient(commonName: string): Promise<ClientCertificate> {
    const { cert, keyPem } = await leaf(commonName, x509.ExtendedKeyUsage.clientAuth);
    const fingerprint = createHash('sha256').update(Buffer.from(cert.rawData)).digest('hex');
    return { certPem: cert.toString('pem'), keyPem, fingerprint };
  }

  return { caPem: ca.toString('pem'), issue, issueClient };
}

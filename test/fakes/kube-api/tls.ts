// A throwaway certificate authority and a server certificate for 127.0.0.1/localhost signed by it,
// so clients validate the fake's TLS for real and a client trusting another CA is refused.
import { webcrypto } from 'node:crypto';
import 'reflect-metadata';
import * as x509 from '@peculiar/x509';

x509.cryptoProvider.set(webcrypto);

const ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256', hash: 'SHA-256' };

export interface CertificateAuthority {
  caPem: string;
  serverCertPem: string;
  serverKeyPem: string;
}

async function privateKeyPem(key: webcrypto.CryptoKey): Promise<string> {
  const der = await webcrypto.subtle.exportKey('pkcs8', key);
  return x509.PemConverter.encode(der, 'PRIVATE KEY');
}

async function keyPair(): Promise<webcrypto.CryptoKeyPair> {
  return webcrypto.subtle.generateKey(ALGORITHM, true, ['sign', 'verify']);
}

export async function createCertificateAuthority(
  commonName = 'fake-kube-api-ca',
): Promise<CertificateAuthority> {
  const notBefore = new Date(Date.now() - 60_000);
  const notAfter = new Date(Date.now() + 24 * 3600_000);
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
  const serverKeys = await keyPair();
  const server = await x509.X509CertificateGenerator.create({
    subject: 'CN=fake-kube-apiserver',
    issuer: ca.subject,
    publicKey: serverKeys.publicKey,
    signingKey: caKeys.privateKey,
    notBefore,
    notAfter,
    signingAlgorithm: ALGORITHM,
    extensions: [
      new x509.BasicConstraintsExtension(false, undefined, true),
      new x509.KeyUsagesExtension(
        x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.keyEncipherment,
        true,
      ),
      new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
      new x509.SubjectAlternativeNameExtension([
        { type: 'ip', value: '127.0.0.1' },
        { type: 'dns', value: 'localhost' },
      ]),
      await x509.AuthorityKeyIdentifierExtension.create(caKeys.publicKey),
    ],
  });
  return {
    caPem: ca.toString('pem'),
    serverCertPem: server.toString('pem'),
    serverKeyPem: await privateKeyPem(serverKeys.privateKey),
  };
}

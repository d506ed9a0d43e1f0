// How a client tells a refused TLS handshake (a certificate that does not chain to the trusted roots,
// a wrong name, an expired or self-signed certificate, a failed negotiation) from a connection that
// was never made: Node's error codes for those, which are fixed words and safe to show a caller.
// A refusal is said as such (`TLS refused (CODE)`), so an operator who pinned the wrong CA sees it.

const TLS_ERROR = /^[A-Z0-9_]{2,64}$/;
const TLS_WORDS = /CERT|SIGNATURE|SELF_SIGNED|UNABLE_TO_|ALTNAME|ERR_SSL_|ERR_TLS_|HOSTNAME/;

/** The error's code when it is a TLS refusal, else undefined. */
export function tlsRefusalCode(error: NodeJS.ErrnoException): string | undefined {
  const code = error.code;
  return typeof code === 'string' && TLS_ERROR.test(code) && TLS_WORDS.test(code) ? code : undefined;
}

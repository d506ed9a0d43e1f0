// A URL as it may be shown: without user, password or secret-looking query parameters. Used by the
// configuration summary and by the logger, so a connection string is never written with its password.

// libpq accepts `?password=…` as well as `user:password@`, so query parameters need the same care.
const SECRET_PARAMETER = /pass|secret|token|key|credential/i;

/** The URL without user, password or secret-looking query parameters; undefined if it does not parse. */
export function redactUrl(value: string): string | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return undefined;
  }
  url.username = '';
  url.password = '';
  if (url.username !== '' || url.password !== '') return undefined;
  for (const name of [...url.searchParams.keys()]) {
    if (SECRET_PARAMETER.test(name)) url.searchParams.set(name, 'redacted');
  }
  return url.toString();
}

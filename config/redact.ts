// Configuration values reach logs and error messages; secrets must not. A variable whose name
// suggests a secret is never shown, and anything URL-like is shown only without its credentials.

const SECRET_NAME = /KEY|SECRET|TOKEN|PASSWORD|PASSWD|CREDENTIAL/i;
// libpq accepts `?password=…` as well as `user:password@`, so query parameters need the same care.
const SECRET_PARAMETER = /pass|secret|token|key|credential/i;
const MAX_SHOWN = 200;

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

/** What an error message may show of a variable's value, or undefined if nothing. */
export function displayValue(variable: string, value: string): string | undefined {
  if (SECRET_NAME.test(variable)) return undefined;
  // A URL pasted into the wrong variable carries its password along, so judge by the value too.
  const urlLike = variable.endsWith('_URL') || value.includes('://') || value.includes('@');
  const shown = urlLike ? redactUrl(value) : value;
  if (shown === undefined) return undefined;
  return shown.length > MAX_SHOWN ? `${shown.slice(0, MAX_SHOWN)}…` : shown;
}

// Configuration values reach logs and error messages; secrets must not. A variable whose name
// suggests a secret is never shown, and anything URL-like is shown only without its credentials.
import { redactUrl } from '../lib/redact-url.ts';

const SECRET_NAME = /KEY|SECRET|TOKEN|PASSWORD|PASSWD|CREDENTIAL/i;
const MAX_SHOWN = 200;

// One implementation for configuration summaries and the logger (lib/ may be imported anywhere).
export { redactUrl };

/** What an error message may show of a variable's value, or undefined if nothing. */
export function displayValue(variable: string, value: string): string | undefined {
  if (SECRET_NAME.test(variable)) return undefined;
  // A URL pasted into the wrong variable carries its password along, so judge by the value too.
  const urlLike = variable.endsWith('_URL') || value.includes('://') || value.includes('@');
  const shown = urlLike ? redactUrl(value) : value;
  if (shown === undefined) return undefined;
  return shown.length > MAX_SHOWN ? `${shown.slice(0, MAX_SHOWN)}…` : shown;
}

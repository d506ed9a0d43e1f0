// Option values shared by the command definitions (cli/main.ts) and the commands themselves. Kept
// free of heavy imports: `sandlot --help` loads this file and commander, nothing else of ours.
import { InvalidArgumentError } from 'commander';

/** A usage mistake the command found itself (exit code 2, one clear line). */
export class UsageError extends Error {
  override readonly name = 'UsageError';
}

/**
 * Where `--inspect` and `sandlot inspect` send inspection events unless told otherwise, and where
 * `sandlot inspector` listens. Not the Stately tools' usual 8080, which is `sandlot serve`'s port.
 */
export const DEFAULT_INSPECTOR_PORT = 4242;

export const defaultInspectorUrl = (port = DEFAULT_INSPECTOR_PORT) => `ws://127.0.0.1:${port}`;

/** A TCP port, 0-65535 (0: any free port, where the command listens). */
export function parsePort(value: string): number {
  const port = Number(value);
  if (value.trim() === '' || !Number.isInteger(port) || port < 0 || port > 65535)
    throw new InvalidArgumentError(`must be a port number 0-65535, got "${value}"`);
  return port;
}

/** The relay's port: its page tells the browser which port to connect to, so it cannot be 0. */
export function parseRelayPort(value: string): number {
  const port = parsePort(value);
  if (port === 0) throw new InvalidArgumentError('must be a fixed port (1-65535): the page names it');
  return port;
}

/** A WebSocket URL (ws:// or wss://). */
export function parseWebSocketUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new InvalidArgumentError(`must be a ws:// or wss:// URL, got "${value}"`);
  }
  if (url.protocol !== 'ws:' && url.protocol !== 'wss:')
    throw new InvalidArgumentError(`must be a ws:// or wss:// URL, got "${value}"`);
  return value;
}

/**
 * `--inspect [port|url]`: absent (false), bare (the default port on 127.0.0.1), a port, or a
 * ws:// URL. Returns the URL to send to, or null when inspection is off.
 */
export function inspectTarget(value: boolean | string | undefined): string | null {
  if (value === undefined || value === false) return null;
  if (value === true) return defaultInspectorUrl();
  if (/^\d+$/.test(value)) {
    const port = parsePort(value);
    if (port === 0)
      throw new InvalidArgumentError('must name the port the inspector relay listens on, not 0');
    return defaultInspectorUrl(port);
  }
  return parseWebSocketUrl(value);
}

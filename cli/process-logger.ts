// The logger of a long-running command (serve, worker), on the stream that keeps log lines apart
// from what the command prints for people and scripts. In a terminal both are for a person, so the
// logger's readable lines share stdout with the "listening" line; anywhere else its JSON lines go to
// stderr, and stdout carries only the command's own lines.
import pino, { type Level, type Logger } from 'pino';
import { createLogger } from '../lib/logger.ts';

export function processLogger(level: Level | 'silent'): Logger {
  if (process.stdout.isTTY === true) return createLogger({ level });
  return createLogger({ level, destination: pino.destination({ fd: 2, sync: true }) });
}

// The Sandlot processes of a chaos run: each a child `node chaos/child-entry.js <command>`
// with its whole output in a log file of its own (one per incarnation), started again under the
// same name (and, for an API, the same port) after the harness killed it. A process that exits
// without the harness killing it is a crash: it is recorded and started again.
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, type WriteStream } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from '../test/support/chaos-worker.ts';
import { onLeak } from './cleanup.ts';

export interface ProcessSpec {
  name: string;
  role: 'api' | 'worker';
  args: string[];
  /** The environment of one incarnation (its provider seed and fault log differ). */
  env: (incarnation: number) => Record<string, string>;
  ready: RegExp;
}

export interface Crash {
  name: string;
  incarnation: number;
  at: number;
  code: number | null;
  signal: string | null;
  log: string;
  tail: string;
  /** It died before it said it was ready (the start-up failed). */
  duringStart: boolean;
}

const READY_TIMEOUT_MS = 90_000;

export class ManagedProcess {
  readonly name: string;
  readonly role: 'api' | 'worker';
  incarnation = 0;
  #child: ChildProcess | null = null;
  #exit: Promise<void> = Promise.resolve();
  #expectExit = false;
  #tail = '';
  #stopped = false;
  #ready = false;
  #readyPromise: Promise<void> = Promise.resolve();
  #starting: Promise<void> | null = null;

  constructor(
    private readonly spec: ProcessSpec,
    private readonly script: string,
    private readonly logDir: string,
    private readonly onCrash: (crash: Crash) => void,
  ) {
    this.name = spec.name;
    this.role = spec.role;
  }

  get pid(): number | undefined {
    return this.#child?.pid;
  }

  get running(): boolean {
    return this.#child !== null && this.#child.exitCode === null && this.#child.signalCode === null;
  }

  get logFile(): string {
    return join(this.logDir, `${this.name}.${this.incarnation}.log`);
  }

  /**
   * Starts a new incarnation and resolves once it is ready. While one is starting, another call
   * waits for that one instead; while one runs, it does nothing.
   */
  start(): Promise<void> {
    if (this.#starting !== null) return this.#starting;
    if (this.running) return Promise.resolve();
    this.#starting = this.#spawn().finally(() => {
      this.#starting = null;
    });
    return this.#starting;
  }

  async #spawn(): Promise<void> {
    this.incarnation += 1;
    this.#expectExit = false;
    this.#stopped = false;
    this.#ready = false;
    this.#tail = '';
    const log: WriteStream = createWriteStream(this.logFile);
    const child = spawn(process.execPath, [this.script, ...this.spec.args], {
      cwd: repoRoot,
      env: {
        PATH: process.env['PATH'] ?? '/usr/bin:/bin',
        ...(process.env['HOME'] === undefined ? {} : { HOME: process.env['HOME'] }),
        ...this.spec.env(this.incarnation),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.#child = child;
    const forget = onLeak(() => child.kill('SIGKILL'));
    const incarnation = this.incarnation;
    const keep = (chunk: Buffer) => {
      log.write(chunk);
      this.#tail = (this.#tail + chunk.toString('utf8')).slice(-4_096);
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
    this.#exit = new Promise<void>((resolve) => {
      child.once('exit', (code, signal) => {
        forget();
        log.end();
        if (!this.#expectExit) {
          this.onCrash({
            name: this.name,
            incarnation,
            at: Date.now(),
            code,
            signal,
            log: join(this.logDir, `${this.name}.${incarnation}.log`),
            tail: this.#tail,
            duringStart: !this.#ready,
          });
        }
        resolve();
      });
    });
    this.#readyPromise = new Promise<void>((resolve, reject) => {
      let seen = '';
      const timer = setTimeout(() => {
        this.#expectExit = true;
        child.kill('SIGKILL');
        reject(new Error(`${this.name} not ready in ${READY_TIMEOUT_MS / 1000} s:\n${this.#tail}`));
      }, READY_TIMEOUT_MS);
      child.stdout?.on('data', (chunk: Buffer) => {
        seen = (seen + chunk.toString('utf8')).slice(-1_024);
        if (this.spec.ready.test(seen)) {
          this.#ready = true;
          clearTimeout(timer);
          resolve();
        }
      });
      void this.#exit.then(() => {
        clearTimeout(timer);
        reject(new Error(`${this.name} exited before it was ready:\n${this.#tail}`));
      });
    });
    await this.#readyPromise;
  }

  /** Resolves once the current incarnation is ready (at once when it is, or failed to start). */
  whenReady(): Promise<void> {
    return this.#readyPromise.catch(() => undefined);
  }

  /** SIGKILL, and wait until it is gone. */
  async kill(): Promise<void> {
    if (!this.running) return;
    this.#expectExit = true;
    if (this.#stopped) this.#child?.kill('SIGCONT');
    this.#child?.kill('SIGKILL');
    await this.#exit;
  }

  /** SIGSTOP: the process holds its connections, locks and calls, and does nothing. */
  pause(): void {
    if (!this.running) return;
    this.#stopped = true;
    this.#child?.kill('SIGSTOP');
  }

  resume(): void {
    if (!this.running || !this.#stopped) return;
    this.#stopped = false;
    this.#child?.kill('SIGCONT');
  }

  /** SIGTERM (graceful shutdown), SIGKILL after 10 s. */
  async stop(): Promise<void> {
    if (!this.running) return;
    this.#expectExit = true;
    this.resume();
    this.#child?.kill('SIGTERM');
    const timer = setTimeout(() => this.#child?.kill('SIGKILL'), 10_000);
    await this.#exit;
    clearTimeout(timer);
  }

  tail(): string {
    return this.#tail;
  }
}

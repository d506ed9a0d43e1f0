// The runner's exchanges with the helpers inside the BuildTest Pods, each a bounded exec through
// pod-exchange.ts: the helper names the Pod UID and request fingerprint before anything is sent.
// `prepare` sends the seed and answers the preparation receipt; `release` lets the prepared command
// start (the helper's startup probe passes from then on); `receipt` and `capture` ask the collector
// for its answer and for the sealed document's exact bytes.
import { definitive, uncertain } from '../errors.ts';
import type { CallOptions } from '../provider.ts';
import type { KubeConfig, V1Pod } from './client-node.ts';
import { budget } from './kube-errors.ts';
import type { BuildTestKube } from './build-test-kube.ts';
import { isTerminal } from './build-test-observe.ts';
import {
  exchangeWithContainer,
  type ExchangeFlow,
  type PodExchangeOptions,
  type PodExchangeResult,
} from './pod-exchange.ts';
import { COLLECTOR_CONTAINER, PREPARATION_CONTAINER } from './build-test-names.ts';

/** Receipts and answers are short JSON; anything longer is not our helper's. */
const MAX_ANSWER_BYTES = 256 * 1024;

export interface HelperTarget {
  namespace: string;
  pod: V1Pod;
  fingerprint: string;
}

/** The container's own argv (the trusted collector command, as the runner wrote it) plus `action`. */
export function argvOf(pod: V1Pod, container: string, action: string): string[] {
  const spec = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])].find(
    (c) => c.name === container,
  );
  const command = spec?.command ?? [];
  // The command Pod's helper serves with a trailing `serve-preparation`; the actions replace it.
  const base = command.at(-1) === 'serve-preparation' ? command.slice(0, -1) : command;
  if (base.length === 0)
    throw definitive('pod-not-ours', `Pod ${pod.metadata?.name ?? ''} has no ${container} command`);
  return [...base, action];
}

function exchange(
  kube: KubeConfig,
  target: HelperTarget,
  container: string,
  action: string,
  payload: Uint8Array,
  call: CallOptions,
  maxResponseBytes = MAX_ANSWER_BYTES,
  onStdout?: PodExchangeOptions['onStdout'],
): Promise<PodExchangeResult> {
  return exchangeWithContainer(
    kube,
    {
      namespace: target.namespace,
      pod: target.pod.metadata?.name ?? '',
      podUid: target.pod.metadata?.uid ?? '',
      container,
      command: argvOf(target.pod, container, action),
      requestFingerprint: target.fingerprint,
      payload,
    },
    { ...call, maxResponseBytes, ...(onStdout === undefined ? {} : { onStdout }) },
  );
}

export const prepare = (kube: KubeConfig, target: HelperTarget, seed: Uint8Array, call: CallOptions) =>
  exchange(kube, target, PREPARATION_CONTAINER, 'prepare', seed, call);

/** Lets the command start; the helper must confirm. */
export async function release(kube: KubeConfig, target: HelperTarget, call: CallOptions): Promise<void> {
  const answer = await exchange(kube, target, PREPARATION_CONTAINER, 'release', new Uint8Array(0), call);
  let released = false;
  try {
    released = (JSON.parse(answer.stdout.toString('utf8')) as { released?: unknown }).released === true;
  } catch {
    released = false;
  }
  if (!released) throw uncertain('release-unconfirmed', 'The preparation helper did not confirm the release');
}

export const collectorReceipt = (kube: KubeConfig, target: HelperTarget, call: CallOptions) =>
  exchange(kube, target, COLLECTOR_CONTAINER, 'receipt', new Uint8Array(0), call);

/** Stdout queued by a streamed capture before the exchange stops reading from the connection. */
const CAPTURE_HIGH_WATER_BYTES = 1024 * 1024;

/**
 * The sealed bytes as they arrive, the answer bounded to exactly the reference's length. The
 * exchange starts with the first read; leaving the stream early cancels it.
 */
export async function* collectorCaptureStream(
  kube: KubeConfig,
  target: HelperTarget,
  length: number,
  call: CallOptions,
): AsyncGenerator<Uint8Array, void, undefined> {
  const state: {
    queue: Buffer[];
    queued: number;
    paused: ExchangeFlow | null;
    wake: (() => void) | null;
    ended: { error: unknown } | null;
  } = { queue: [], queued: 0, paused: null, wake: null, ended: null };
  const stop = new AbortController();
  const signal = AbortSignal.any([call.signal, stop.signal]);
  const onStdout = (chunk: Buffer, flow: ExchangeFlow) => {
    state.queue.push(chunk);
    state.queued += chunk.length;
    if (state.queued > CAPTURE_HIGH_WATER_BYTES && state.paused === null) {
      state.paused = flow;
      flow.pause();
    }
    state.wake?.();
  };
  const empty = new Uint8Array(0);
  const exchanged = exchange(
    kube,
    target,
    COLLECTOR_CONTAINER,
    'capture',
    empty,
    { ...call, signal },
    length,
    onStdout,
  );
  void exchanged
    .then(
      () => (state.ended = { error: null }),
      (error: unknown) => (state.ended = { error }),
    )
    .finally(() => state.wake?.());
  try {
    for (;;) {
      const chunk = state.queue.shift();
      if (chunk !== undefined) {
        state.queued -= chunk.length;
        if (state.paused !== null && state.queued <= CAPTURE_HIGH_WATER_BYTES / 2) {
          state.paused.resume();
          state.paused = null;
        }
        yield chunk;
        continue;
      }
      if (state.ended !== null) {
        const failure = state.ended.error;
        if (failure !== null)
          throw failure instanceof Error ? failure : new Error('the capture exchange failed');
        return;
      }
      await new Promise<void>((resolve) => (state.wake = resolve));
      state.wake = null;
    }
  } finally {
    // A reader that left early (or a failure) ends the exchange; its own error is already seen.
    stop.abort();
    await exchanged.catch(() => undefined);
  }
}

/**
 * Waits until the helper runs (its init container running, or the Pod Running) and answers the Pod
 * read then; null when the Pod ended or went away first (nothing left to prepare).
 */
export async function awaitHelper(
  pods: BuildTestKube,
  namespace: string,
  name: string,
  uid: string,
  pollMs: number,
  call: CallOptions,
): Promise<V1Pod | null> {
  for (;;) {
    const pod = await pods.getPod(namespace, name, call);
    if (pod === null || pod.metadata?.uid !== uid || pod.metadata.deletionTimestamp || isTerminal(pod)) {
      return null;
    }
    const helper = (pod.status?.initContainerStatuses ?? []).find((s) => s.name === PREPARATION_CONTAINER);
    if (helper?.state?.running !== undefined || pod.status?.phase === 'Running') return pod;
    await budget.sleep(pollMs, call, `wait for the preparation helper of Pod ${name}`);
  }
}

// A fake Kubernetes API server for tests: real HTTPS on 127.0.0.1 with a CA generated at start and a
// required bearer token, serving Agent Sandbox kinds (validated against their CRD schemas) and the
// core kinds the adapter touches, with a controller loop that plays agent-sandbox, the scheduler,
// the kubelet and the garbage collector. Not a conformance-grade API server: see README.md.
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { KubeApi } from './api-server.ts';
import { LoopController, type ControllerOptions, type FakeController } from './controller.ts';
import { warmUpCrdValidators } from './crd-schemas.ts';
import { Deleter } from './deletion.ts';
import { ExecFaultPlan, type FakeExecFaults } from './exec-faults.ts';
import { defaultExecHandlers, type ExecHandler } from './exec-handlers.ts';
import { createExecEndpoint } from './exec-server.ts';
import type { ExecSession } from './exec-session.ts';
import { FaultPlan, type FakeFaults } from './faults.ts';
import { createRequestHandler } from './http-router.ts';
import { PodLogs, type FakePodLogs } from './pod-logs.ts';
import { renderKubeconfig } from './kubeconfig.ts';
import { RESOURCES } from './resources.ts';
import { ObjectStore, type FakeStore } from './store.ts';
import { createCertificateAuthority } from './tls.ts';
import type { RecordedRequest } from './types.ts';
import { WatchStreams, type FakeWatches, type WatchSettings } from './watch-streams.ts';

export type { ControllerOptions, FakeController } from './controller.ts';
export type { FakeFaults, FaultMatch } from './faults.ts';
export type { FakeStore } from './store.ts';
export type { FakePodLogs } from './pod-logs.ts';
export type { FakeWatches } from './watch-streams.ts';
export type { WatchEvent, WatchEventType } from './watch-events.ts';
export type { ObjectLifetime } from './lifetimes.ts';
export type { ExecFault, ExecFaultMatch, FakeExecFaults } from './exec-faults.ts';
export type { ExecContext, ExecHandler, ExecResult } from './exec-handlers.ts';
export { EXEC_ANNOTATIONS, digestStdin, echoDigestHandler, preparationHandler } from './exec-handlers.ts';
export type { ExecSession } from './exec-session.ts';
export type {
  Condition,
  KubeObject,
  ObjectMeta,
  ObjectRef,
  OwnerReference,
  PlantedObject,
  RecordedRequest,
  Verb,
} from './types.ts';
export { createCertificateAuthority } from './tls.ts';
export { nameHash } from './conditions.ts';
export {
  CLAIM_UID,
  LAUNCH_TYPE,
  SANDBOX_NAME_HASH,
  TEMPLATE_REF_ANNOTATION,
  TEMPLATE_REF_HASH,
} from './labels.ts';

export interface FakeKubeApiOptions {
  /** Namespace of the kubeconfig context (default `default`); also the default for finishPod. */
  namespace?: string;
  controller?: ControllerOptions;
  watch?: FakeWatchOptions;
}

export interface FakeWatchOptions extends WatchSettings {
  /** How many recent changes (all kinds together) a watch can resume from (default 10,000). */
  historySize?: number;
}

export interface FakeKubeApi {
  /** https://127.0.0.1:PORT */
  url: string;
  /** PEM of the CA that signed the server certificate. */
  caPem: string;
  /** The bearer token the server requires; anything else gets 401. */
  token: string;
  /** Kubeconfig YAML: the cluster pinned to `caPem` (or the given one), a token user, a context. */
  kubeconfig(options?: { namespace?: string; caPem?: string; token?: string }): string;
  objects: FakeStore;
  controller: FakeController;
  faults: FakeFaults;
  /** The open watch streams: count them, end them all as a server timeout would, or cut them. */
  watches: FakeWatches;
  /** Every request received, in order, including refused ones (exec upgrades too). */
  requests: RecordedRequest[];
  /** TLS connections accepted since start (a client that keeps connections alive opens few). */
  connections(): number;
  /**
   * What each container does when exec'd into, by container name: `preparation` and `echo-digest`
   * at start; set, replace or delete entries freely. A container without one answers InternalError.
   */
  execHandlers: Map<string, ExecHandler>;
  execFaults: FakeExecFaults;
  /** Every exec session upgraded, in order, with its stdin byte count and outcome. */
  execSessions: ExecSession[];
  /** What each Pod's containers printed, served by the log subresource (pod-logs.ts). */
  podLogs: FakePodLogs;
  close(): Promise<void>;
}

export async function startFakeKubeApi(options: FakeKubeApiOptions = {}): Promise<FakeKubeApi> {
  const namespace = options.namespace ?? 'default';
  const controllerOptions = options.controller ?? {};
  warmUpCrdValidators(RESOURCES);
  const tls = await createCertificateAuthority();
  const token = randomBytes(24).toString('base64url');
  const { historySize, ...watchSettings } = options.watch ?? {};
  const store = new ObjectStore(historySize === undefined ? {} : { historySize });
  const watches = new WatchStreams(store, watchSettings);
  const api = new KubeApi(store);
  const deleter = new Deleter(store, { podLingerSteps: controllerOptions.podLingerSteps ?? 0 });
  const faults = new FaultPlan();
  const requests: RecordedRequest[] = [];
  const logs = new PodLogs();
  const server = createServer(
    { key: tls.serverKeyPem, cert: tls.serverCertPem },
    createRequestHandler({ api, deleter, faults, token, requests, watches, logs }),
  );
  const execHandlers = defaultExecHandlers();
  const execFaults = new ExecFaultPlan();
  const execSessions: ExecSession[] = [];
  const exec = createExecEndpoint({
    store,
    token,
    handlers: execHandlers,
    faults: execFaults,
    sessions: execSessions,
    requests,
  });
  server.on('upgrade', exec.onUpgrade);
  let connections = 0;
  server.on('secureConnection', () => (connections += 1));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const url = `https://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const controller = new LoopController(
    { store, api, deleter, defaultNamespace: namespace },
    controllerOptions,
  );
  return {
    url,
    caPem: tls.caPem,
    token,
    kubeconfig: (kc = {}) =>
      renderKubeconfig({
        server: url,
        caPem: kc.caPem ?? tls.caPem,
        token: kc.token ?? token,
        namespace: kc.namespace ?? namespace,
      }),
    objects: store,
    controller,
    faults,
    watches,
    requests,
    connections: () => connections,
    execHandlers,
    execFaults,
    execSessions,
    podLogs: logs,
    close: async () => {
      controller.pause();
      exec.close();
      await watches.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

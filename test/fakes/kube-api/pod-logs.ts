// The Pod log subresource (`GET /api/v1/namespaces/{ns}/pods/{name}/log`): what each container
// printed, as a test or the fake's kubelet set it, served the way the API server serves a finished
// container's log. `container` is required when the Pod has more than one container (its init
// containers count), and must name one of them (400 otherwise); `tailLines` keeps the last lines
// (an unterminated last line counts as one), then `limitBytes` keeps the first bytes of those, as
// the kubelet applies them. A negative `tailLines` or a `limitBytes` below 1 is 422 Invalid. A
// container nothing was set for has printed nothing (an empty 200). `follow`, `previous`,
// `sinceSeconds`, `sinceTime` and `timestamps` are not modelled: asking for them is a 400.
import { KubeError, badRequest } from './errors.ts';
import type { KubeObject } from './types.ts';

export interface FakePodLogs {
  /** Sets what `container` of Pod `namespace/name` printed (replacing anything set before). */
  set(namespace: string, name: string, container: string, content: string | Uint8Array): void;
  clear(): void;
}

const UNMODELLED = ['follow', 'previous', 'sinceSeconds', 'sinceTime', 'timestamps'];

function containerNames(pod: KubeObject): { main: string[]; init: string[] } {
  const spec = pod.spec as { containers?: { name: string }[]; initContainers?: { name: string }[] };
  return {
    main: (spec.containers ?? []).map((c) => c.name),
    init: (spec.initContainers ?? []).map((c) => c.name),
  };
}

function count(query: Record<string, string>, key: string, least: number): number | undefined {
  const text = query[key];
  if (text === undefined) return undefined;
  const value = /^-?[0-9]+$/.test(text) ? Number(text) : NaN;
  if (!Number.isSafeInteger(value) || value < least) {
    const rule = least === 0 ? 'must be greater than or equal to 0' : 'must be greater than 0';
    throw new KubeError(
      422,
      'Invalid',
      `PodLogOptions "${key}" is invalid: ${key}: Invalid value: ${text}: ${rule}`,
    );
  }
  return value;
}

/** The last `lines` lines of `log`. */
function lastLines(log: Buffer, lines: number): Buffer {
  if (lines === 0) return Buffer.alloc(0);
  // An unterminated last line is a line: start counting newlines before it.
  let at = log.length - (log[log.length - 1] === 0x0a ? 1 : 0);
  for (let seen = 0; at > 0;) {
    at -= 1;
    if (log[at] === 0x0a && (seen += 1) === lines) return log.subarray(at + 1);
  }
  return log;
}

export class PodLogs implements FakePodLogs {
  private readonly logs = new Map<string, Buffer>();

  set(namespace: string, name: string, container: string, content: string | Uint8Array): void {
    this.logs.set(`${namespace}/${name}/${container}`, Buffer.from(content));
  }

  clear(): void {
    this.logs.clear();
  }

  /** The answer to a log request for `pod` (already read: a missing Pod is the caller's 404). */
  read(pod: KubeObject, query: Record<string, string>): Buffer {
    const asked = UNMODELLED.filter((key) => query[key] !== undefined && query[key] !== 'false');
    if (asked.length > 0) throw badRequest(`the fake Kubernetes API does not model ${asked.join(', ')}`);
    const { main, init } = containerNames(pod);
    const name = pod.metadata.name;
    let container = query['container'];
    if (container === undefined || container === '') {
      if (main.length + init.length !== 1) {
        throw badRequest(
          `a container name must be specified for pod ${name}, choose one of: [${main.join(' ')}] or one of the init containers: [${init.join(' ')}]`,
        );
      }
      container = main[0] ?? init[0] ?? '';
    }
    if (![...main, ...init].includes(container))
      throw badRequest(`container ${container} is not valid for pod ${name}`);
    const tailLines = count(query, 'tailLines', 0);
    const limitBytes = count(query, 'limitBytes', 1);
    let log = this.logs.get(`${pod.metadata.namespace ?? ''}/${name}/${container}`) ?? Buffer.alloc(0);
    if (tailLines !== undefined) log = lastLines(log, tailLines);
    if (limitBytes !== undefined && log.length > limitBytes) log = log.subarray(0, limitBytes);
    return log;
  }
}

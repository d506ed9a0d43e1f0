// The chaos verdict over the whole run, not only its end state: from the provider's own record of
// when each resource existed, and every moment an Environment was said to be Released (its first
// journal row in lifecycle Released, or an answer the chaos client received), two checks:
//   released-while-live: a resource of an Environment live at any instant after that Environment
//     was first said to be Released, whatever happened to the resource later (a late create that a
//     cleanup released afterwards is still a finding: the Released answer was false when given);
//   volume-double-mounted: two resources of different provision operations that mount the same
//     Workspace volume and were live at the same instant.
// Pure: the callers read the intervals (chaos/timeline-sources.ts) on one clock, PostgreSQL's where
// the provider keeps its record there. No slack is allowed: an interval is half-open
// [createdAt, deletedAt), and any overlap longer than zero is a finding.

export interface ResourceLifetime {
  /** The provider's resource ID, or the object (`Pod ns/name`) on the fake cluster. */
  resource: string;
  environmentId: string | null;
  /** The provision operation it belongs to (a provider's duplicate names its operation's). */
  operationId: string;
  /** The Workspace volumes it mounts. */
  volumes: string[];
  /** Epoch milliseconds (fractions allowed). */
  createdAtMs: number;
  /** Null while it is live. */
  deletedAtMs: number | null;
}

export interface ReleasedMoment {
  environmentId: string;
  atMs: number;
  /** What said so: `journal revision 9 (provider.succeeded)`, `POST …/release 200 (api-1)`. */
  source: string;
}

export interface ReleasedWhileLive {
  environmentId: string;
  resource: string;
  operationId: string;
  /** The first moment the Environment was said to be Released, and what said it. */
  releasedAtMs: number;
  releasedBy: string;
  /** When the resource was live after that: from max(created, released) until deleted (null: still). */
  liveFromMs: number;
  liveUntilMs: number | null;
}

export interface VolumeDoubleMount {
  volume: string;
  first: Pick<ResourceLifetime, 'resource' | 'environmentId' | 'operationId'>;
  second: Pick<ResourceLifetime, 'resource' | 'environmentId' | 'operationId'>;
  overlapFromMs: number;
  /** Null: both are still live. */
  overlapUntilMs: number | null;
}

const endOf = (r: ResourceLifetime) => r.deletedAtMs ?? Number.POSITIVE_INFINITY;
const finite = (ms: number) => (Number.isFinite(ms) ? ms : null);

/** The earliest moment each Environment was said to be Released. */
export function firstReleased(moments: readonly ReleasedMoment[]): Map<string, ReleasedMoment> {
  const first = new Map<string, ReleasedMoment>();
  for (const m of moments) {
    const seen = first.get(m.environmentId);
    if (seen === undefined || m.atMs < seen.atMs) first.set(m.environmentId, m);
  }
  return first;
}

export function releasedWhileLive(
  resources: readonly ResourceLifetime[],
  moments: readonly ReleasedMoment[],
): ReleasedWhileLive[] {
  const released = firstReleased(moments);
  const findings: ReleasedWhileLive[] = [];
  for (const r of resources) {
    const moment = r.environmentId === null ? undefined : released.get(r.environmentId);
    if (moment === undefined) continue;
    const liveFromMs = Math.max(r.createdAtMs, moment.atMs);
    if (endOf(r) <= liveFromMs) continue;
    findings.push({
      environmentId: moment.environmentId,
      resource: r.resource,
      operationId: r.operationId,
      releasedAtMs: moment.atMs,
      releasedBy: moment.source,
      liveFromMs,
      liveUntilMs: r.deletedAtMs,
    });
  }
  return findings;
}

export function volumeDoubleMounts(resources: readonly ResourceLifetime[]): VolumeDoubleMount[] {
  const byVolume = new Map<string, ResourceLifetime[]>();
  for (const r of resources) {
    for (const volume of new Set(r.volumes)) byVolume.set(volume, [...(byVolume.get(volume) ?? []), r]);
  }
  const findings: VolumeDoubleMount[] = [];
  const who = ({ resource, environmentId, operationId }: ResourceLifetime) => ({
    resource,
    environmentId,
    operationId,
  });
  for (const [volume, mounts] of byVolume) {
    const sorted = [...mounts].sort((a, b) => a.createdAtMs - b.createdAtMs);
    sorted.forEach((first, i) => {
      for (const second of sorted.slice(i + 1)) {
        if (second.operationId === first.operationId) continue;
        const from = Math.max(first.createdAtMs, second.createdAtMs);
        const until = Math.min(endOf(first), endOf(second));
        if (until <= from) continue;
        findings.push({
          volume,
          first: who(first),
          second: who(second),
          overlapFromMs: from,
          overlapUntilMs: finite(until),
        });
      }
    });
  }
  return findings;
}

/** One line per finding, for the recorder and the report. */
export function describeReleasedWhileLive(f: ReleasedWhileLive): string {
  const until = f.liveUntilMs === null ? 'still live' : `until ${iso(f.liveUntilMs)}`;
  return (
    `resource ${f.resource} (operation ${f.operationId}) live from ${iso(f.liveFromMs)} ${until}, ` +
    `after the Environment was said to be Released at ${iso(f.releasedAtMs)} by ${f.releasedBy}`
  );
}

export function describeDoubleMount(f: VolumeDoubleMount): string {
  const side = (s: VolumeDoubleMount['first']) =>
    `${s.resource} (${s.environmentId ?? 'no Environment'}, operation ${s.operationId})`;
  const until = f.overlapUntilMs === null ? 'still' : `until ${iso(f.overlapUntilMs)}`;
  return `volume ${f.volume} mounted by ${side(f.first)} and ${side(f.second)} from ${iso(f.overlapFromMs)} ${until}`;
}

/** ISO instant with the microseconds PostgreSQL keeps. */
function iso(ms: number): string {
  const micros = Math.round(ms * 1000);
  const whole = Math.floor(micros / 1000);
  return new Date(whole).toISOString().replace('Z', `${String(micros - whole * 1000).padStart(3, '0')}Z`);
}

// Discovery documents (/api, /apis, /api/v1, /apis/<group>/<version>, /version) so clients that
// resolve kinds to resources (client-node's KubernetesObjectApi) work against the fake.
import { RESOURCES, type ResourceType } from './resources.ts';
import type { JsonObject } from './types.ts';

const VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update'];

function resourceList(groupVersion: string, resources: ResourceType[]): JsonObject {
  return {
    kind: 'APIResourceList',
    apiVersion: 'v1',
    groupVersion,
    resources: resources.flatMap((r) => [
      { name: r.plural, singularName: r.singular, namespaced: r.namespaced, kind: r.kind, verbs: VERBS },
      ...(r.statusSubresource
        ? [
            {
              name: `${r.plural}/status`,
              singularName: '',
              namespaced: r.namespaced,
              kind: r.kind,
              verbs: ['get', 'patch', 'update'],
            },
          ]
        : []),
    ]),
  };
}

function groups(): Map<string, string> {
  const byGroup = new Map<string, string>();
  for (const r of RESOURCES) if (r.group !== '') byGroup.set(r.group, r.version);
  return byGroup;
}

function groupDocument(group: string, version: string): JsonObject {
  const preferred = { groupVersion: `${group}/${version}`, version };
  return { name: group, versions: [preferred], preferredVersion: preferred };
}

/** The discovery document for a path, or undefined when the path is not a discovery path. */
export function discovery(path: string): JsonObject | undefined {
  const parts = path.split('/').filter((p) => p !== '');
  if (parts.length === 1 && parts[0] === 'version') {
    return { major: '1', minor: '33', gitVersion: 'v1.33.0-fake', platform: 'linux/amd64' };
  }
  if (parts[0] === 'api') {
    if (parts.length === 1) return { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [] };
    if (parts.length === 2 && parts[1] === 'v1')
      return resourceList(
        'v1',
        RESOURCES.filter((r) => r.group === ''),
      );
    return undefined;
  }
  if (parts[0] !== 'apis') return undefined;
  if (parts.length === 1) {
    const list = [...groups()].map(([group, version]) => groupDocument(group, version));
    return { kind: 'APIGroupList', apiVersion: 'v1', groups: list };
  }
  const [, group = '', version] = parts;
  const served = groups().get(group);
  if (served === undefined) return undefined;
  if (parts.length === 2) return { kind: 'APIGroup', apiVersion: 'v1', ...groupDocument(group, served) };
  if (parts.length === 3 && version === served) {
    return resourceList(
      `${group}/${version}`,
      RESOURCES.filter((r) => r.group === group),
    );
  }
  return undefined;
}

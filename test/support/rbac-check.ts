// Kubernetes RBAC, evaluated the way the API server's authorizer does for the rules we render: which
// rules a ServiceAccount holds through RoleBindings and ClusterRoleBindings, whether they allow one
// call (verb, API group, resource[/subresource], namespace, name), and which of their permissions no
// call used. The calls come from the fake Kubernetes API's record (test/fakes/kube-api `requests`).
import type { RecordedRequest } from '../fakes/kube-api/index.ts';
import type { RenderedObject } from './deploy-manifests.ts';

export interface ApiCall {
  verb: string;
  group: string;
  /** Plural resource, with `/subresource` when there is one: `pods/status`. */
  resource: string;
  /** Absent for cluster-scoped resources. */
  namespace?: string;
  name?: string;
}

interface PolicyRule {
  apiGroups?: string[];
  resources?: string[];
  verbs: string[];
  resourceNames?: string[];
}

/** The rules one binding gives: a namespace for a Role or RoleBinding's ClusterRole, none cluster-wide. */
export interface Grant {
  source: string;
  namespace?: string;
  rule: PolicyRule;
}

/** One permission a grant spells out, at its finest: one group, resource, verb and (maybe) name. */
export interface Permission {
  source: string;
  namespace?: string;
  group: string;
  resource: string;
  verb: string;
  name?: string;
}

// The fake's verb for PUT is `replace`; RBAC calls it `update`.
const RBAC_VERBS: Record<string, string> = { replace: 'update' };
const DISCOVERY = /^\/(api|apis)(\/[^/]+){0,2}\/?$|^\/version\/?$/;

/** The calls in the fake's record; discovery (granted to every authenticated user) is left out. */
export function callsOf(requests: readonly RecordedRequest[]): ApiCall[] {
  return requests.flatMap((request): ApiCall[] => {
    if (request.verb === undefined || request.resource === undefined) {
      if (DISCOVERY.test(request.path)) return [];
      throw new Error(`a request the fake could not map to a resource: ${request.method} ${request.path}`);
    }
    const [prefix, maybeGroup] = request.path.split('/').filter((p) => p !== '');
    const call: ApiCall = {
      verb: RBAC_VERBS[request.verb] ?? request.verb,
      group: prefix === 'apis' ? (maybeGroup ?? '') : '',
      resource: request.subresource ? `${request.resource}/${request.subresource}` : request.resource,
    };
    if (request.namespace !== undefined) call.namespace = request.namespace;
    if (request.name !== undefined) call.name = request.name;
    // A WebSocket exec, attach or port-forward is a GET, authorized as `get` on the subresource;
    // since Kubernetes 1.35 (AuthorizePodWebsocketUpgradeCreatePermission, on by default) the API
    // server also asks for `create` on it, as SPDY's POST always did. Both are needed.
    if (call.verb === 'get' && /^pods\/(exec|attach|portforward)$/.test(call.resource)) {
      return [call, { ...call, verb: 'create' }];
    }
    return [call];
  });
}

/** Distinct calls, as sorted strings, for readable failures. */
export function describeCall(call: ApiCall | Permission): string {
  const where = call.namespace === undefined ? '(cluster)' : `ns/${call.namespace}`;
  const name = call.name === undefined ? '' : ` name=${call.name}`;
  return `${call.verb} ${call.group || 'core'}/${call.resource} ${where}${name}`;
}

const isSubject = (subject: unknown, sa: { namespace: string; name: string }): boolean => {
  const s = subject as { kind?: string; name?: string; namespace?: string };
  return s.kind === 'ServiceAccount' && s.name === sa.name && s.namespace === sa.namespace;
};

/** Every rule the ServiceAccount holds, through the rendered bindings. */
export function grantsOf(
  objects: readonly RenderedObject[],
  sa: { namespace: string; name: string },
): Grant[] {
  const role = (kind: string, name: string, namespace?: string) =>
    objects.find(
      (o) =>
        o.kind === kind &&
        o.metadata.name === name &&
        (namespace === undefined || o.metadata.namespace === namespace),
    );
  return objects.flatMap((binding): Grant[] => {
    if (binding.kind !== 'RoleBinding' && binding.kind !== 'ClusterRoleBinding') return [];
    const subjects = (binding['subjects'] ?? []) as unknown[];
    if (!subjects.some((s) => isSubject(s, sa))) return [];
    const ref = binding['roleRef'] as { kind: string; name: string };
    const namespace = binding.kind === 'RoleBinding' ? binding.metadata.namespace : undefined;
    const target = role(ref.kind, ref.name, ref.kind === 'Role' ? namespace : undefined);
    if (target === undefined)
      throw new Error(`${binding.kind} ${binding.metadata.name} binds a missing ${ref.kind} ${ref.name}`);
    const source = `${ref.kind} ${ref.name} via ${binding.kind} ${binding.metadata.name}`;
    return ((target['rules'] ?? []) as PolicyRule[]).map((rule) =>
      namespace === undefined ? { source, rule } : { source, namespace, rule },
    );
  });
}

const has = (list: string[] | undefined, value: string): boolean =>
  list !== undefined && (list.includes(value) || list.includes('*'));

export function allows(grant: Grant, call: ApiCall): boolean {
  const { rule } = grant;
  if (grant.namespace !== undefined && call.namespace !== grant.namespace) return false;
  if (!has(rule.apiGroups, call.group) || !has(rule.resources, call.resource) || !has(rule.verbs, call.verb))
    return false;
  const names = rule.resourceNames ?? [];
  return names.length === 0 || (call.name !== undefined && names.includes(call.name));
}

/** Each grant spelled out to one group, resource, verb and name (or any name). */
export function permissionsOf(grants: readonly Grant[]): Permission[] {
  return grants.flatMap(({ source, namespace, rule }) =>
    (rule.apiGroups ?? []).flatMap((group) =>
      (rule.resources ?? []).flatMap((resource) =>
        rule.verbs.flatMap((verb) =>
          (rule.resourceNames?.length ? rule.resourceNames : [undefined]).map((name): Permission => ({
            source,
            group,
            resource,
            verb,
            ...(namespace === undefined ? {} : { namespace }),
            ...(name === undefined ? {} : { name }),
          })),
        ),
      ),
    ),
  );
}

/** Whether a call used this one permission. */
export function uses(call: ApiCall, permission: Permission): boolean {
  return allows(
    {
      source: permission.source,
      ...(permission.namespace === undefined ? {} : { namespace: permission.namespace }),
      rule: {
        apiGroups: [permission.group],
        resources: [permission.resource],
        verbs: [permission.verb],
        ...(permission.name === undefined ? {} : { resourceNames: [permission.name] }),
      },
    },
    call,
  );
}

// The defaults the API server fills into a Service on create, as the core Service REST strategy does:
// `type: ClusterIP`, `sessionAffinity: None`, each port's `protocol: TCP` and `targetPort` (= `port`),
// and a virtual IP from the service range unless `clusterIP: None` (headless, which the Sandbox
// controller asks for), mirrored in `clusterIPs`. Readers such as the Agent Sandbox adapter rely on
// `type` being present on read-back, never absent.
import { isObject, type KubeObject } from './types.ts';

let nextAddress = 10;

function allocate(): string {
  const address = `10.96.0.${nextAddress}`;
  nextAddress = nextAddress >= 250 ? 10 : nextAddress + 1;
  return address;
}

export function defaultService(object: KubeObject): void {
  const spec = isObject(object.spec) ? object.spec : (object.spec = {});
  spec['type'] ??= 'ClusterIP';
  spec['sessionAffinity'] ??= 'None';
  if (Array.isArray(spec['ports'])) {
    for (const port of spec['ports']) {
      if (!isObject(port)) continue;
      port['protocol'] ??= 'TCP';
      port['targetPort'] ??= port['port'];
    }
  }
  if (spec['type'] === 'ClusterIP' || spec['type'] === 'NodePort' || spec['type'] === 'LoadBalancer') {
    if (spec['clusterIP'] === undefined || spec['clusterIP'] === '') spec['clusterIP'] = allocate();
    spec['clusterIPs'] ??= [spec['clusterIP']];
  }
}

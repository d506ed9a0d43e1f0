// The adapter's one import of @kubernetes/client-node (pinned to 1.4.x: 2.x pulls in undici 8,
// which needs Node >= 22.19 and does not load on this project's Node 20).

export {
  ApiException,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  NodeV1Api,
  Observable,
  ServerConfiguration,
  Watch,
  createConfiguration,
} from '@kubernetes/client-node';
export type {
  Cluster,
  Configuration,
  ConfigurationOptions,
  ObservableMiddleware,
  RequestContext,
  SecurityAuthentication,
  V1Container,
  V1PersistentVolume,
  V1PersistentVolumeClaim,
  V1Pod,
  V1RuntimeClass,
  V1Service,
} from '@kubernetes/client-node';

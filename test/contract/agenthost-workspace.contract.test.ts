// The AgentHost Workspace contract over both implementations: the embedded Host on its own table
// and Workspace directories (PGlite and PostgreSQL), and the HTTPS client against a stand-in Host
// Pod on 127.0.0.2 with certificates made at test start, answering from an embedded Host so both
// are judged against the same trees on disk (test/support/embedded-host-pod.ts).
import { backends } from '../support/databases.ts';
import { openEmbeddedHost, openEmbeddedHostPod } from '../support/embedded-host-pod.ts';
import { defineAgentHostWorkspaceContract } from './agenthost-workspace-cases.ts';

const SERVER_NAME = 'sbx-flush.sandboxes.svc.cluster.local';

for (const backend of backends) {
  defineAgentHostWorkspaceContract(`embedded (${backend})`, () => openEmbeddedHost(backend));
}

defineAgentHostWorkspaceContract('HTTPS client against a stand-in Host Pod', () =>
  openEmbeddedHostPod(SERVER_NAME),
);

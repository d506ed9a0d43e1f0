// The AgentHost activation contract over both implementations: the embedded Host on its own tables
// and Workspace directories (PGlite and PostgreSQL), and the HTTPS client against a stand-in Host
// Pod on 127.0.0.2 with certificates made at test start, answering from an embedded Host so both
// are judged against the same sessions and trees (test/support/embedded-host-pod.ts).
import { backends } from '../support/databases.ts';
import { openEmbeddedHost, openEmbeddedHostPod } from '../support/embedded-host-pod.ts';
import { defineAgentHostActivationContract } from './agenthost-activation-cases.ts';

const SERVER_NAME = 'sbx-activate.sandboxes.svc.cluster.local';

for (const backend of backends) {
  defineAgentHostActivationContract(`embedded (${backend})`, () => openEmbeddedHost(backend));
}

defineAgentHostActivationContract('HTTPS client against a stand-in Host Pod', () =>
  openEmbeddedHostPod(SERVER_NAME),
);

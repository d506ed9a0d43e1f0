// The operator console (served at /console by http/routes/console.ts, bundled by esbuild with
// preact): the Environment list with its filters, and one Environment live (the machine's regions
// with the current states, lease, fences, readiness conditions, attempts, cleanups, BuildTest
// operations, Workspace flushes and the journal), with release, abandon and reconcile behind a
// confirmation. Every call goes through api.ts. Each view is its own file: list-view.ts,
// detail-view.ts (with machine-view.ts); parts.ts holds what they share.
import { h, render, type ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { DetailView } from './detail-view.ts';
import { ListView } from './list-view.ts';
import { signIn, type Address, type Session } from './parts.ts';

function routeOf(hash: string): Address | null {
  const match = /^#\/env\/([^/]+)\/([^/]+)\/([^/]+)$/.exec(hash);
  if (match === null) return null;
  const [, projectId, runId, environmentId] = match.map((part) => decodeURIComponent(part));
  return { projectId: projectId!, runId: runId!, environmentId: environmentId! };
}

function App(): ComponentChildren {
  const [session, setSession] = useState<Session | null>(null);
  const [hash, setHash] = useState(window.location.hash);
  useEffect(() => {
    const onHash = () => setHash(window.location.hash);
    window.addEventListener('hashchange', onHash);
    void fetch('/console/session', { headers: { accept: 'application/json' } }).then(async (response) => {
      if (response.status === 401) return signIn();
      setSession((await response.json()) as Session);
    });
    return () => window.removeEventListener('hashchange', onHash);
  }, []);
  if (session === null) return h('p', null, 'Loading…');
  const address = routeOf(hash);
  return h(
    'main',
    null,
    h(
      'header',
      null,
      h('h1', null, h('a', { href: '#/' }, 'Sandlot console')),
      h(
        'form',
        { method: 'post', action: '/console/logout', class: 'who' },
        `${session.subject} (tenant ${session.tenantId}${session.operator ? ', operator' : ''}) `,
        h('button', { type: 'submit' }, 'Sign out'),
      ),
    ),
    address === null ? h(ListView, { session }) : h(DetailView, { session, address }),
  );
}

const STYLE = `
body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#1d232a;background:#f6f7f9}
main{max-width:78rem;margin:0 auto;padding:1rem}
header{display:flex;justify-content:space-between;align-items:center}
header h1{font-size:1.3rem} header a{color:inherit;text-decoration:none}
table{border-collapse:collapse;width:100%;background:#fff;margin:.5rem 0}
th,td{border-bottom:1px solid #dde1e6;padding:.3rem .5rem;text-align:left;vertical-align:top}
tr.unresolved td,td.unresolved{background:#fff4d6}
mark{background:#f5b400;padding:0 .25rem;border-radius:3px}
.filters{display:flex;flex-wrap:wrap;gap:.5rem 1rem;align-items:end;margin-bottom:.5rem}
.problem{border:1px solid #d0342c;background:#fdecea;padding:.5rem;margin:.5rem 0}
.problem pre{white-space:pre-wrap;margin:.3rem 0 0}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.2rem 1rem;background:#fff;padding:.5rem}
dt{color:#5a6470} dd{margin:0}
.machine{display:flex;flex-wrap:wrap;gap:.5rem}
.region{background:#fff;border:1px solid #c8ced6;padding:.4rem;min-width:12rem}
.region h4{margin:0 0 .3rem}
.state-box{border:1px solid #c8ced6;border-radius:4px;padding:.15rem .4rem;margin:.15rem 0;color:#5a6470}
.state-box.active{border:2px solid #0b6bcb;background:#e6f0fb;color:#0b3d73;font-weight:600}
.children{margin-left:.5rem}
.edges{margin:.2rem 0 0 .6rem;padding:0;font-weight:400;font-size:12px}
.journal{background:#fff;padding:.5rem 2rem}
.empty{color:#5a6470}
.actions button{margin-right:.5rem}
`;

const style = document.createElement('style');
style.textContent = STYLE;
document.head.append(style);
render(h(App, null), document.getElementById('app')!);

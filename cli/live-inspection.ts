// `--inspect` on serve and worker: the inspector bridge fed by the runtime's commit listener. Loaded
// (with @statelyai/inspect and ws) only when the flag is given; off, this costs one function call.
import type { Logger } from 'pino';
import type { ActorRuntime } from '../actors/runtime.ts';
import type { Closer } from './shutdown.ts';

/** Starts feeding the inspector when `url` is set; returns its closer for the shutdown sequence. */
export async function startInspection(
  runtime: Pick<ActorRuntime<{ type: string }>, 'onCommitted'>,
  url: string | undefined,
  logger: Logger,
): Promise<Closer[]> {
  if (url === undefined) return [];
  const [{ InspectionFeed }, { environmentMachine }] = await Promise.all([
    import('./inspection.ts'),
    import('../machines/environment.ts'),
  ]);
  const feed = new InspectionFeed({
    url,
    machine: environmentMachine,
    logger: logger.child({ component: 'inspector' }),
  });
  const stop = runtime.onCommitted(feed.listener);
  return [
    {
      name: 'inspector',
      close: async () => {
        stop();
        await feed.close();
        const { sent, dropped } = feed.stats();
        logger.info({ sent, dropped }, 'inspector closed');
      },
    },
  ];
}

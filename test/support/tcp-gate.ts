// A TCP proxy on 127.0.0.1 that a test opens and shuts like a gate: shut, it accepts connections
// and holds them without a byte either way (a server that never answers the handshake); open, it
// joins each held and each new connection to the upstream. `cut()` drops every joined connection
// and shuts the gate again: to the client, the server went away.
import { connect, createServer, type Server, type Socket } from 'node:net';

export interface TcpGate {
  /** `127.0.0.1:<port>`'s port, fixed for the gate's life. */
  port: number;
  open(): void;
  cut(): void;
  close(): Promise<void>;
}

export async function startTcpGate(upstream: { host: string; port: number }): Promise<TcpGate> {
  let opened = false;
  const held = new Set<Socket>();
  const joined = new Set<Socket>();
  const join = (client: Socket) => {
    held.delete(client);
    const server = connect(upstream.port, upstream.host);
    joined.add(client).add(server);
    const drop = () => {
      client.destroy();
      server.destroy();
      joined.delete(client);
      joined.delete(server);
    };
    client.on('error', drop).on('close', drop);
    server.on('error', drop).on('close', drop);
    client.pipe(server).pipe(client);
  };
  const listener: Server = createServer((client) => {
    if (opened) return join(client);
    held.add(client);
    client.pause();
    client.on('error', () => client.destroy()).on('close', () => held.delete(client));
  });
  await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
  const address = listener.address();
  if (address === null || typeof address === 'string') throw new Error('no port');
  return {
    port: address.port,
    open() {
      opened = true;
      // pipe() resumes the held socket, after it is attached: nothing it buffered is lost.
      for (const client of [...held]) join(client);
    },
    cut() {
      opened = false;
      for (const socket of [...joined]) socket.destroy();
    },
    close() {
      opened = false;
      for (const socket of [...held, ...joined]) socket.destroy();
      return new Promise<void>((resolve) => listener.close(() => resolve()));
    },
  };
}

// Progress on stderr while a benchmark point runs: a redrawn bar when stderr is a terminal, plain
// lines (at most one every 2 s, and at the end) when it is not, so logs stay readable.

export interface Progress {
  tick(done: number): void;
  done(note?: string): void;
}

const WIDTH = 30;

export function progress(label: string, total: number): Progress {
  const stream = process.stderr;
  const started = performance.now();
  let lastLine = 0;
  const rate = (done: number) => (done / Math.max(1e-3, (performance.now() - started) / 1000)).toFixed(1);
  if (stream.isTTY) {
    const draw = (done: number) => {
      const filled = Math.round((done / Math.max(1, total)) * WIDTH);
      const bar = '█'.repeat(filled) + '░'.repeat(WIDTH - filled);
      stream.write(`\r${label} ${bar} ${done}/${total} ${rate(done)}/s `);
    };
    draw(0);
    return {
      tick: draw,
      done(note) {
        draw(total);
        stream.write(note === undefined ? '\n' : ` ${note}\n`);
      },
    };
  }
  return {
    tick(done) {
      const now = performance.now();
      if (now - lastLine < 2_000) return;
      lastLine = now;
      stream.write(`${label}: ${done}/${total} (${rate(done)}/s)\n`);
    },
    done(note) {
      stream.write(`${label}: ${total}/${total} done${note === undefined ? '' : ` ${note}`}\n`);
    },
  };
}

const began = performance.now();

/** A line of status on stderr (what the benchmark is starting or measuring), with the time so far. */
export const status = (line: string): void => {
  process.stderr.write(`[bench ${Math.round((performance.now() - began) / 1000)}s] ${line}\n`);
};

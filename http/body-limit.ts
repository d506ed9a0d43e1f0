// Bodies are bounded before anything parses them, a declared or a streamed length alike: one over
// its limit is refused with 413 `payload-too-large` and is not read. Its unread rest is still on the
// connection, which therefore cannot carry another request: the answer says `Connection: close`,
// the server closes the connection after it, and a client sends its next request on a new one.
import { bodyLimit } from 'hono/body-limit';
import { Problem, problemResponse } from './problems.ts';

/** `what` names the body in the problem's detail ("the body", "the seed"). */
export function boundedBody(maxSize: number, what: string) {
  return bodyLimit({
    maxSize,
    onError: (c) => {
      const answer = problemResponse(
        new Problem(413, 'payload-too-large', 'Payload too large', `${what} exceeds ${maxSize} bytes`),
        c.req.path,
      );
      answer.headers.set('connection', 'close');
      return answer;
    },
  });
}

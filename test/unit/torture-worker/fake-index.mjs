/* global setInterval */
// Stands in for the library in the torture worker: next() hands out 1..300 at once, then waits
// for good, as a refill does while its DC is cut off.
let handed = 0;
setInterval(() => {}, 1_000); // a driver keeps the process alive with its sockets

export async function connect() {
  return {
    sequence() {
      return {
        grantee: 'dc1',
        stats: () => ({ shardMoves: 0 }),
        tryNext: () => undefined,
        async next() {
          if (handed < 300) return ++handed;
          return new Promise(() => {});
        },
        async take() {
          throw new Error('not used');
        },
      };
    },
    async close() {},
  };
}

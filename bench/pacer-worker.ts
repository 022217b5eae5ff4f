/**
 * The open-loop sender's clock, in a worker thread: sleeps in `Atomics.wait` (a futex with a
 * microsecond timeout, so neither thread spins) until each intended send time, then tells the
 * main thread which sends are due. Timers on the main thread are millisecond-grained, too coarse
 * for requests 200 µs apart.
 */
declare const self: Worker;

export interface PacerStart {
  /** Intended send times, epoch ms (performance.timeOrigin + performance.now() in every thread). */
  times: Float64Array;
  /** Wake this much before each time (the message takes about that long to arrive). */
  earlyMs: number;
}

const sleeper = new Int32Array(new SharedArrayBuffer(4));
const epochNow = () => performance.timeOrigin + performance.now();

self.onmessage = (event: MessageEvent<PacerStart>) => {
  const { times, earlyMs } = event.data;
  let i = 0;
  while (i < times.length) {
    const wait = (times[i] as number) - earlyMs - epochNow();
    if (wait > 0.01) Atomics.wait(sleeper, 0, 0, wait);
    // Everything due by now goes in one message.
    const now = epochNow() + earlyMs;
    while (i < times.length && (times[i] as number) <= now) i++;
    postMessage(i);
  }
  postMessage(-1);
};

/** One server-sent event frame as read off the wire (a comment-only frame has `comment`). */
export interface SseFrame {
  id?: string;
  event?: string;
  data?: string;
  comment?: string;
}

/**
 * A real SSE client over fetch: reads frames as they arrive, so a test can wait for the next
 * frame that matches (with a deadline, never a sleep).
 */
export async function openSse(url: string, headers: Record<string, string>) {
  const abort = new AbortController();
  const response = await fetch(url, { headers, signal: abort.signal });
  const frames: SseFrame[] = [];
  const waiters: (() => void)[] = [];
  let ended = false;
  if (response.ok && response.body !== null) {
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let pending = "";
    void (async () => {
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          pending += value;
          let cut = pending.indexOf("\n\n");
          while (cut !== -1) {
            frames.push(parseFrame(pending.slice(0, cut)));
            pending = pending.slice(cut + 2);
            cut = pending.indexOf("\n\n");
          }
          for (const w of waiters.splice(0)) w();
        }
      } catch {
        // Aborted by close().
      }
      ended = true;
      for (const w of waiters.splice(0)) w();
    })();
  }
  let cursor = 0;
  return {
    response,
    frames,
    get ended() {
      return ended;
    },
    /** The next frame (after the ones already taken) that matches, within `ms`. */
    async next(match: (f: SseFrame) => boolean, ms = 5000): Promise<SseFrame> {
      const deadline = Date.now() + ms;
      for (;;) {
        while (cursor < frames.length) {
          const f = frames[cursor++] as SseFrame;
          if (match(f)) return f;
        }
        if (ended) throw new Error("stream ended");
        const left = deadline - Date.now();
        if (left <= 0) throw new Error("no matching frame in time");
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, left);
        });
      }
    },
    /** Waits until the stream ends (the server closed it). */
    async closed(ms = 5000): Promise<void> {
      const deadline = Date.now() + ms;
      while (!ended) {
        if (Date.now() > deadline) throw new Error("stream still open");
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, 50);
        });
      }
    },
    close() {
      abort.abort();
    },
  };
}

function parseFrame(text: string): SseFrame {
  const frame: SseFrame = {};
  for (const line of text.split("\n")) {
    if (line.startsWith(":")) frame.comment = line.slice(1).trim();
    else {
      const colon = line.indexOf(":");
      const field = colon === -1 ? line : line.slice(0, colon);
      const value = colon === -1 ? "" : line.slice(colon + 1).replace(/^ /, "");
      if (field === "id" || field === "event" || field === "data") frame[field] = value;
    }
  }
  return frame;
}

export const ofType = (type: string) => (f: SseFrame) => f.event === type;

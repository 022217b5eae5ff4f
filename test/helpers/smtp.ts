import { SMTPServer } from "smtp-server";

export interface ReceivedMail {
  from: string;
  to: string[];
  raw: string;
  /** The raw message with quoted-printable soft breaks and escapes undone. */
  text: string;
}

function decodeQuotedPrintable(raw: string): string {
  return raw
    .replace(/=\r?\n/g, "")
    .replace(/=([0-9A-F]{2})/g, (_, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));
}

/** A real SMTP server on 127.0.0.1 that keeps what it receives. */
export async function startSmtpServer() {
  const received: ReceivedMail[] = [];
  /** Run on every message that arrives: `waitFor` waits on the arrival itself, not on time. */
  const arrivals = new Set<() => void>();
  /** Recipients still to refuse with a temporary failure (451), one per message. */
  let refuseNext = 0;
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS", "AUTH"],
    logger: false,
    onRcptTo(_address, _session, callback) {
      if (refuseNext > 0) {
        refuseNext--;
        return callback(Object.assign(new Error("Try again later"), { responseCode: 451 }));
      }
      callback();
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on("data", (c: Buffer) => chunks.push(c));
      stream.on("end", () => {
        const raw = Buffer.concat(chunks).toString("utf8");
        received.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
          to: session.envelope.rcptTo.map((r) => r.address),
          raw,
          text: decodeQuotedPrintable(raw),
        });
        for (const arrived of arrivals) arrived();
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", () => resolve()));
  const address = server.server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return {
    url: `smtp://127.0.0.1:${port}`,
    received,
    /** The next `count` messages are refused with 451 (a temporary failure). */
    refuse(count: number) {
      refuseNext = count;
    },
    /** Waits (bounded) until `count` messages have arrived. */
    async waitFor(count: number, timeoutMs = 5_000): Promise<ReceivedMail[]> {
      if (received.length < count)
        await new Promise<void>((resolve) => {
          const arrived = () => {
            if (received.length < count) return;
            arrivals.delete(arrived);
            clearTimeout(timer);
            resolve();
          };
          const timer = setTimeout(() => {
            arrivals.delete(arrived);
            resolve();
          }, timeoutMs);
          arrivals.add(arrived);
        });
      if (received.length < count) throw new Error(`expected ${count} mails, got ${received.length}`);
      return received;
    },
    stop: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

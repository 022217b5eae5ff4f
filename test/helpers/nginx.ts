import { expect } from "bun:test";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { request as httpsRequest } from "node:https";
import { connect, createServer } from "node:net";
import { join } from "node:path";
import { scratchDir } from "./scratch-dirs";

/** Debian's nginx (.ci/run installs it when missing, as it does Chromium), never a download. */
export const NGINX = process.env.SVC_NGINX || "/usr/sbin/nginx";

/** The address nginx connects to the service from: the one proxy the service trusts. */
export const NGINX_SOURCE = "127.0.0.9";

export interface Nginx {
  /** The HTTPS port nginx listens on (127.0.0.1). */
  readonly port: number;
  stop(): Promise<void>;
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * Resolves once something accepts connections on the port (nginx has started). Bounded by time,
 * not by attempts: under the full suite's load nginx once took longer than 500 quick attempts
 * (2.9 s) to listen.
 */
async function accepting(port: number, exited: () => boolean, withinMs = 20_000): Promise<void> {
  const deadline = performance.now() + withinMs;
  while (performance.now() < deadline) {
    if (exited()) throw new Error("nginx exited at start");
    const ok = await new Promise<boolean>((resolve) => {
      const socket = connect(port, "127.0.0.1");
      socket.once("connect", () => {
        socket.destroy();
        resolve(true);
      });
      socket.once("error", () => resolve(false));
    });
    if (ok) return;
    await Bun.sleep(5);
  }
  throw new Error(`nginx did not listen on ${port} within ${withinMs} ms`);
}

/**
 * Starts nginx terminating TLS (a self-signed certificate for `host`, made here) in front of the
 * service's processes at 127.0.0.1:`upstreamPorts` (taken in turn), configured as
 * docs/deploying.md tells publishers, and connecting from NGINX_SOURCE. Fails, saying what to
 * install, when there is no nginx.
 */
export async function startNginx(upstreamPorts: readonly number[], host: string): Promise<Nginx> {
  if (!existsSync(NGINX)) {
    throw new Error(`No nginx at ${NGINX}: install Debian's nginx package (apt-get install nginx), or set SVC_NGINX.`);
  }
  const dir = scratchDir("svc-nginx-");
  const temp = join(dir, "temp");
  mkdirSync(temp, { recursive: true, mode: 0o777 });
  const made = Bun.spawnSync(
    [
      "openssl",
      "req",
      "-x509",
      "-newkey",
      "rsa:2048",
      "-nodes",
      "-days",
      "1",
      "-subj",
      `/CN=${host}`,
      "-keyout",
      join(dir, "key.pem"),
      "-out",
      join(dir, "cert.pem"),
    ],
    { stdout: "ignore", stderr: "pipe" },
  );
  if (made.exitCode !== 0) throw new Error(`openssl could not make a certificate: ${made.stderr.toString()}`);
  const port = await freePort();
  const proxied = `
      proxy_pass http://svc;
      proxy_bind ${NGINX_SOURCE};
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $host;
      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
      proxy_set_header X-Forwarded-Proto $scheme;
      proxy_set_header X-Forwarded-Host $host;`;
  writeFileSync(
    join(dir, "nginx.conf"),
    `daemon off;
worker_processes 1;
pid ${join(dir, "nginx.pid")};
error_log ${join(dir, "error.log")} warn;
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path ${temp}/body;
  proxy_temp_path ${temp}/proxy;
  fastcgi_temp_path ${temp}/fastcgi;
  uwsgi_temp_path ${temp}/uwsgi;
  scgi_temp_path ${temp}/scgi;
  upstream svc { ${upstreamPorts.map((p) => `server 127.0.0.1:${p};`).join(" ")} keepalive 8; keepalive_timeout 5s; }
  server {
    listen 127.0.0.1:${port} ssl;
    server_name ${host};
    ssl_certificate ${join(dir, "cert.pem")};
    ssl_certificate_key ${join(dir, "key.pem")};
    location /svc/ {${proxied}
    }
    location /console {${proxied}
    }
  }
}
`,
  );
  const child = Bun.spawn([NGINX, "-p", dir, "-e", join(dir, "error.log"), "-c", join(dir, "nginx.conf")], {
    stdout: "ignore",
    stderr: "pipe",
  });
  let exited = false;
  void child.exited.then(() => {
    exited = true;
  });
  try {
    await accepting(port, () => exited);
  } catch (error) {
    child.kill();
    const log = existsSync(join(dir, "error.log")) ? readFileSync(join(dir, "error.log"), "utf8") : "";
    throw new Error(`${(error as Error).message}: ${await new Response(child.stderr).text()}${log}`);
  }
  return {
    port,
    async stop() {
      child.kill("SIGTERM");
      await child.exited;
    },
  };
}

export interface Answer {
  readonly status: number;
  readonly headers: Record<string, string | string[] | undefined>;
  readonly text: string;
}

/**
 * One HTTPS request to nginx as a reader's browser sends it: to `host` (SNI and Host), from the
 * reader's own address (`from`, a loopback address such as 127.0.0.2), trusting the test's
 * self-signed certificate.
 */
export function throughNginx(
  nginx: Nginx,
  host: string,
  from: string,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpsRequest(
      {
        host: "127.0.0.1",
        port: nginx.port,
        servername: host,
        localAddress: from,
        rejectUnauthorized: false,
        method,
        path,
        headers: {
          host,
          ...headers,
          ...(body === undefined ? {} : { "content-length": String(Buffer.byteLength(body)) }),
        },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          text += chunk;
        });
        res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, text }));
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}

/** The cookies an answer sets, each as its whole Set-Cookie line. */
export function cookiesOf(answer: Answer): string[] {
  return (answer.headers["set-cookie"] ?? []) as string[];
}

/**
 * A browser visiting the console through `send` (a request from one reader's address): it keeps
 * the cookies it is given, requires each to be Secure, and posts forms as `origin` with the CSRF
 * token of the last page it read.
 */
export function consoleVisit(
  send: (method: string, path: string, headers: Record<string, string>, body?: string) => Promise<Answer>,
  origin: string,
): (method: string, path: string, form?: Record<string, string>) => Promise<Answer> {
  const jar = new Map<string, string>();
  let page = "";
  return async (method, path, form) => {
    const headers: Record<string, string> = {};
    if (jar.size > 0) headers.cookie = [...jar].map(([k, v]) => `${k}=${v}`).join("; ");
    let body: string | undefined;
    if (form !== undefined) {
      const csrf = page.match(/name="_csrf" value="([^"]+)"/)?.[1] ?? "";
      body = new URLSearchParams({ _csrf: csrf, ...form }).toString();
      headers["content-type"] = "application/x-www-form-urlencoded";
      headers.origin = origin;
    }
    const answer = await send(method, path, headers, body);
    for (const cookie of cookiesOf(answer)) {
      expect(cookie).toContain("Secure");
      const pair = cookie.split(";")[0] as string;
      const eq = pair.indexOf("=");
      if (/Max-Age=0/.test(cookie)) jar.delete(pair.slice(0, eq));
      else jar.set(pair.slice(0, eq), pair.slice(eq + 1));
    }
    if (String(answer.headers["content-type"] ?? "").startsWith("text/html")) page = answer.text;
    return answer;
  };
}

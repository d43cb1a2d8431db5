// Test support: the real gatehouse binary on a free port over a fresh
// SQLite file, with a webhook channel whose relay is a local HTTP server
// here. Cards arrive at the relay (their signatures checked as the docs
// tell relays to); verdicts go back signed, as a relay sends them: the way
// an approver's tap reaches Gatehouse from Teams or a pager.
//
// The binary is $GATEHOUSE_BIN, or built once per process from the
// repository with `go build`. Used by the TypeScript SDK's tests and the
// MCP server's tests (mcpserver/e2e).

import { spawn, execFileSync } from "node:child_process";
import { createHmac, timingSafeEqual } from "node:crypto";
import { mkdtempSync, writeFileSync, rmSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join, dirname } from "node:path";
import { fileURLToPath } from "node:url";

export const TOKEN = "sdk-test-token-0123456789abcdef";
export const OTHER_TOKEN = "sdk-other-token-0123456789abcdef";
const SECRET = "sdk-test-webhook-secret-0123456789";
const repo = join(dirname(fileURLToPath(import.meta.url)), "..", "..", "..");

let built;
/** The gatehouse binary: $GATEHOUSE_BIN, or one built from the repository. */
export function binary() {
  if (process.env.GATEHOUSE_BIN) {
    return process.env.GATEHOUSE_BIN;
  }
  if (!built) {
    const dir = mkdtempSync(join(tmpdir(), "gatehouse-bin-"));
    built = join(dir, "gatehouse");
    execFileSync("go", ["build", "-o", built, "./cmd/gatehouse"], { cwd: repo, stdio: "inherit" });
    process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
  }
  return built;
}

function sign(ts, body) {
  return "v1=" + createHmac("sha256", SECRET).update(`v1:${ts}:`).update(body).digest("hex");
}

/** A relay: records every POST, checks its signature, answers 200. */
function startRelay() {
  const cards = [];
  const waiting = [];
  const server = createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks);
      const ts = req.headers["x-gatehouse-timestamp"] ?? "";
      const want = Buffer.from(sign(ts, body));
      const got = Buffer.from(String(req.headers["x-gatehouse-signature"] ?? ""));
      const ok = got.length === want.length && timingSafeEqual(got, want) && Math.abs(Date.now() / 1000 - Number(ts)) < 300;
      const msg = JSON.parse(body.toString("utf8"));
      msg.signatureOK = ok;
      cards.push(msg);
      for (const w of [...waiting]) {
        if (w.match(msg)) {
          waiting.splice(waiting.indexOf(w), 1);
          w.resolve(msg);
        }
      }
      res.writeHead(200, { "content-type": "application/json" });
      res.end("{}");
    });
  });
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      resolve({
        url: `http://127.0.0.1:${port}/hook`,
        cards,
        /** Resolves with the first message (past or future) that matches. */
        next(match, timeoutMs = 10000) {
          const found = cards.find(match);
          if (found) {
            return Promise.resolve(found);
          }
          return new Promise((resolve, reject) => {
            const t = setTimeout(() => reject(new Error(`no matching relay message in ${timeoutMs} ms; got ${JSON.stringify(cards)}`)), timeoutMs);
            waiting.push({ match, resolve: (m) => { clearTimeout(t); resolve(m); } });
          });
        },
        close: () => new Promise((r) => server.close(r)),
      });
    });
  });
}

function config({ port, db, relayURL, routes }) {
  return `listen: 127.0.0.1:${port}
public_url: http://gate.example.test
database:
  driver: sqlite
  dsn: ${db}
auth:
  api_tokens:
    - name: sdk-agent
      token: ${TOKEN}
    - name: other-agent
      token: ${OTHER_TOKEN}
defaults:
  channels: [relay]
channels:
  - name: relay
    type: webhook
    url: ${relayURL}
    secret: ${SECRET}
${routes ?? ""}`;
}

/**
 * Starts a server. `routes` is appended to the config (YAML under a
 * top-level "routes:" key). `port` reuses a port (for restarts).
 */
export async function startGatehouse({ routes, port = 0, dir, relay } = {}) {
  dir ??= mkdtempSync(join(tmpdir(), "gatehouse-sdk-"));
  relay ??= await startRelay();
  const cfg = join(dir, "gatehouse.yaml");
  writeFileSync(cfg, config({ port, db: join(dir, "gatehouse.db"), relayURL: relay.url, routes }));
  const proc = spawn(binary(), ["serve", "--config", cfg], { cwd: dir, stdio: ["ignore", "ignore", "pipe"] });
  let log = "";
  const url = await new Promise((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`gatehouse did not start:\n${log}`)), 20000);
    proc.stderr.on("data", (d) => {
      log += d;
      const m = /gatehouse listening.* addr=(http:\/\/[0-9.:]+)/.exec(log);
      if (m) {
        clearTimeout(t);
        resolve(m[1]);
      }
    });
    proc.on("exit", (code) => reject(new Error(`gatehouse exited ${code}:\n${log}`)));
  });
  const exited = new Promise((r) => proc.on("exit", r));
  const gh = {
    url,
    token: TOKEN,
    dir,
    relay,
    log: () => log,
    port: Number(new URL(url).port),
    /** The card of the next request for tool (or the first already posted). */
    card: (tool) => relay.next((m) => m.type === "card" && m.request.tool_name === tool),
    /** Sends a signed verdict as the relay would; returns the HTTP status and answer. */
    async decide(requestId, decision, actor = "alice", reason = "") {
      const body = JSON.stringify({ request_id: requestId, decision, actor, reason });
      const ts = String(Math.floor(Date.now() / 1000));
      const resp = await fetch(`${url}/callbacks/webhook/relay`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-gatehouse-timestamp": ts, "x-gatehouse-signature": sign(ts, body) },
        body,
      });
      return { status: resp.status, body: await resp.json() };
    },
    /**
     * Decides on the web page as the bootstrap admin (whose one-time
     * password the server logs), optionally approving edited arguments:
     * the one channel where an approver edits a call. The request's route
     * must include the web channel.
     */
    async webDecide(requestId, verdict, { reason = "", modifiedArgs } = {}) {
      const password = /password=(\S+)/.exec(log)?.[1];
      const jar = new Map();
      const call = async (path, init = {}) => {
        const resp = await fetch(url + path, {
          ...init,
          redirect: "manual",
          headers: { ...init.headers, cookie: [...jar].map(([k, v]) => `${k}=${v}`).join("; ") },
        });
        for (const c of resp.headers.getSetCookie()) {
          const [kv] = c.split(";");
          const [k, v] = kv.split("=");
          jar.set(k, v);
        }
        return { status: resp.status, text: await resp.text() };
      };
      const csrf = (page) => /name="csrf" value="([^"]+)"/.exec(page)?.[1];
      const form = (fields) => ({
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: new URLSearchParams(fields).toString(),
      });
      const login = await call("/login");
      const res = await call("/login", form({ csrf: csrf(login.text), username: "admin", password, next: "/" }));
      if (res.status !== 303) {
        throw new Error(`web login: ${res.status} ${res.text}`);
      }
      const page = await call(`/approvals/${requestId}`);
      const fields = { csrf: csrf(page.text), verdict, reason };
      if (modifiedArgs !== undefined) {
        fields.modified_args = JSON.stringify(modifiedArgs);
      }
      const done = await call(`/approvals/${requestId}/decide`, form(fields));
      if (done.status !== 303) {
        throw new Error(`web decide: ${done.status} ${done.text}`);
      }
    },
    /** GET /api/v1/approvals?... with the token. */
    async list(query = "") {
      const resp = await fetch(`${url}/api/v1/approvals?limit=1000&${query}`, { headers: { authorization: `Bearer ${TOKEN}` } });
      return (await resp.json()).approvals;
    },
    /** SIGKILL, as a crash would. */
    async kill() {
      proc.kill("SIGKILL");
      await exited;
    },
    /** Stops the server and its relay and removes its files. */
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) {
        proc.kill("SIGTERM");
        await exited;
      }
      await relay.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  return gh;
}

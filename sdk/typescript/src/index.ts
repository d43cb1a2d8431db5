/**
 * Gatehouse's TypeScript client: ask a person before a sensitive tool call
 * and wait for the verdict (POST /api/v1/gate). No runtime dependencies;
 * Node 20 or later (it uses the global fetch).
 *
 * Every failure (no server, a wrong token, a malformed answer, an abort)
 * resolves to a deny: `allow` is true only when the server answered, in the
 * expected shape, that the call may run.
 *
 * @module
 */

/** What to ask for: the body of POST /api/v1/gate. Only `tool_name` is required. */
export interface GateRequest {
  tool_name: string;
  tool_args?: unknown;
  summary?: string;
  requires_confirmation?: boolean;
  agent_id?: string;
  user_id?: string;
  session_id?: string;
  tool_call_id?: string;
  metadata?: Record<string, unknown>;
  route?: string;
  timeout_seconds?: number;
  /**
   * Ties retries to one request. A random key is made when absent, and
   * kept across the call's own retries, so a restart of the server or a
   * dropped connection never asks twice.
   */
  idempotency_key?: string;
}

/** The gate's verdict: the seed design's hook result. */
export interface HookResult {
  request_id: string;
  /** approved, rejected, expired, cancelled, or error (the gate failed). */
  status: string;
  /** True only when the call may run. */
  allow: boolean;
  /** Why the call may not run; "" when it may. */
  error: string;
  /** The approver's edited arguments, to run the call with instead; null when none. */
  modified_args: unknown;
  side_effects: string[];
  /** The request's page on the web UI, when the server has a public_url. */
  url?: string;
  /** The tool call the request is about, when it named one. */
  tool_call_id?: string;
}

/** How to reach the server. */
export interface GatehouseOptions {
  /** The server. Default: $GATEHOUSE_URL, else http://127.0.0.1:8080. */
  url?: string;
  /** A bearer token of the server's auth.api_tokens. Default: $GATEHOUSE_TOKEN. */
  token?: string;
  /** Seconds one long poll is held (default 55, under common proxy idle timeouts). */
  waitSeconds?: number;
  /**
   * Seconds to keep re-attaching while the server is unreachable or
   * answers 5xx, before giving up with a deny (default 120).
   */
  retryForSeconds?: number;
  /** The fetch to use (default: the global fetch). */
  fetch?: typeof fetch;
}

/** Per-call options. */
export interface GateOptions {
  /** Gives up (with a deny) when aborted; the request stays pending on the server. */
  signal?: AbortSignal;
}

const denyNote = " (denied: the gate fails closed)";

/** A deny that names what failed. */
function failure(requestId: string, message: string): HookResult {
  return {
    request_id: requestId,
    status: "error",
    allow: false,
    error: `gatehouse: ${message}${denyNote}`,
    side_effects: [],
    modified_args: null,
  };
}

/** An error status with the server's own words, which retrying will not change. */
class AnswerError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** A random idempotency key. */
export function newKey(): string {
  const b = new Uint8Array(16);
  globalThis.crypto.getRandomValues(b);
  return "gh-" + Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
}

function env(name: string): string | undefined {
  const p = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process;
  const v = p?.env?.[name];
  return v === "" ? undefined : v;
}

/** A client of one Gatehouse server. */
export class Gatehouse {
  readonly url: string;
  readonly #token: string | undefined;
  readonly #wait: number;
  readonly #retryFor: number;
  readonly #fetch: typeof fetch;

  constructor(options: GatehouseOptions = {}) {
    this.url = (options.url ?? env("GATEHOUSE_URL") ?? "http://127.0.0.1:8080").replace(/\/+$/, "");
    this.#token = options.token ?? env("GATEHOUSE_TOKEN");
    this.#wait = options.waitSeconds ?? 55;
    this.#retryFor = options.retryForSeconds ?? 120;
    this.#fetch = options.fetch ?? globalThis.fetch;
  }

  /**
   * Asks for approval and waits for the verdict. It never rejects: every
   * failure resolves to a HookResult with `allow: false` and
   * `status: "error"` whose `error` says what went wrong.
   */
  async gate(request: GateRequest, options: GateOptions = {}): Promise<HookResult> {
    if (typeof request?.tool_name !== "string" || request.tool_name.trim() === "") {
      return failure("", "tool_name: required");
    }
    const req = { ...request, idempotency_key: request.idempotency_key || newKey() };
    let body: string;
    try {
      body = JSON.stringify(req);
    } catch (e) {
      return failure("", `the request is not JSON: ${(e as Error).message}`);
    }
    const target = `${this.url}/api/v1/gate?wait=${encodeURIComponent(`${this.#wait}s`)}`;
    let requestId = "";
    let delay = 250;
    let failingSince = 0;
    for (;;) {
      if (options.signal?.aborted) {
        return failure(requestId, "the wait was aborted");
      }
      let res: HookResult;
      try {
        res = await this.#post(target, body, options.signal);
      } catch (e) {
        if (e instanceof AnswerError && e.status < 500) {
          return failure(requestId, e.message);
        }
        if (options.signal?.aborted) {
          return failure(requestId, "the wait was aborted");
        }
        const now = Date.now();
        failingSince ||= now;
        if (now - failingSince > this.#retryFor * 1000) {
          return failure(requestId, `server unreachable at ${this.url} for ${this.#retryFor}s: ${(e as Error).message}`);
        }
        await sleep(delay, options.signal);
        delay = Math.min(delay * 2, 5000);
        continue;
      }
      if (requestId && res.request_id !== requestId) {
        // The key holds one request: an answer about another (a cache in
        // the way, another caller's) is no verdict on it.
        return failure(requestId, `the answer is about request ${JSON.stringify(res.request_id.slice(0, 100))}, not ${JSON.stringify(requestId)}`);
      }
      if (request.tool_call_id && res.tool_call_id && res.tool_call_id !== request.tool_call_id) {
        // The answer names another tool call: no verdict on this one, even
        // as the first answer, before a request id is known.
        return failure(requestId, `the answer is about call ${JSON.stringify(res.tool_call_id.slice(0, 100))}, not ${JSON.stringify(request.tool_call_id)}`);
      }
      requestId = res.request_id || requestId;
      if (res.status !== "pending") {
        return res;
      }
      // Still pending: the server held the poll; go again at once.
      delay = 250;
      failingSince = 0;
    }
  }

  async #post(target: string, body: string, signal: AbortSignal | undefined): Promise<HookResult> {
    const limit = AbortSignal.timeout((this.#wait + 15) * 1000);
    const headers: Record<string, string> = { "content-type": "application/json", accept: "application/json" };
    if (this.#token) {
      headers.authorization = `Bearer ${this.#token}`;
    }
    // No redirect is followed: the gate answers itself, and an allow from
    // wherever one points (a proxy's rule, a hostile network) is no
    // verdict; fetch would re-send the call there. A 3xx is an error: a deny.
    const resp = await this.#fetch(target, {
      method: "POST",
      headers,
      body,
      redirect: "manual",
      signal: signal ? anySignal(signal, limit) : limit,
    });
    if (resp.redirected || (resp.status >= 300 && resp.status < 400) || resp.type === "opaqueredirect") {
      // A caller's own fetch may have dropped redirect: "manual" and
      // followed it: a deny either way.
      throw new AnswerError(resp.status >= 300 && resp.status < 400 ? resp.status : 302,
        `answered with a redirect${resp.redirected ? ` (followed to ${resp.url})` : ""}: set the URL to where the gate answers itself`);
    }
    const text = await resp.text();
    let data: unknown;
    try {
      data = JSON.parse(text);
    } catch {
      data = undefined;
    }
    if (resp.status !== 200) {
      throw new AnswerError(resp.status, errorMessage(resp.status, data, text));
    }
    const res = hookResult(data);
    if (!res) {
      throw new AnswerError(502, `unreadable answer from ${this.url}: ${text.slice(0, 200)}`);
    }
    return res;
  }
}

/**
 * The answer as a HookResult, or undefined when it is not one. `allow` must
 * be the boolean true and the status one that allows: anything else denies.
 */
function hookResult(data: unknown): HookResult | undefined {
  if (typeof data !== "object" || data === null || Array.isArray(data)) {
    return undefined;
  }
  const d = data as Record<string, unknown>;
  if (typeof d.status !== "string" || typeof d.allow !== "boolean") {
    return undefined;
  }
  const allow = d.allow === true && (d.status === "approved" || d.status === "expired");
  return {
    request_id: typeof d.request_id === "string" ? d.request_id : "",
    status: d.status,
    allow,
    error: typeof d.error === "string" ? d.error : allow ? "" : `denied (${d.status})`,
    modified_args: d.modified_args ?? null,
    side_effects: Array.isArray(d.side_effects) ? d.side_effects.filter((s): s is string => typeof s === "string") : [],
    ...(typeof d.url === "string" ? { url: d.url } : {}),
    ...(typeof d.tool_call_id === "string" ? { tool_call_id: d.tool_call_id } : {}),
  };
}

/** The message of an error answer: {"error":{"code","message"}} or a hook result's error. */
function errorMessage(status: number, data: unknown, text: string): string {
  const e = (data as { error?: unknown } | undefined)?.error;
  if (typeof e === "object" && e !== null && typeof (e as { message?: unknown }).message === "string") {
    return (e as { message: string }).message;
  }
  if (typeof e === "string") {
    return e.replace(/^gatehouse: /, "").replace(denyNote, "");
  }
  return `HTTP ${status}: ${text.slice(0, 200)}`;
}

/** A signal that aborts when either does (AbortSignal.any came in Node 20.3). */
function anySignal(a: AbortSignal, b: AbortSignal): AbortSignal {
  if (typeof AbortSignal.any === "function") {
    return AbortSignal.any([a, b]);
  }
  const c = new AbortController();
  for (const s of [a, b]) {
    if (s.aborted) {
      c.abort(s.reason);
    }
    s.addEventListener("abort", () => c.abort(s.reason), { once: true });
  }
  return c.signal;
}

function sleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
}

let defaultClient: Gatehouse | undefined;

/**
 * Asks for approval with a client built from GATEHOUSE_URL and
 * GATEHOUSE_TOKEN (or `client`), and waits for the verdict. Never rejects:
 * failures resolve to a deny.
 */
export function gate(request: GateRequest, options: GateOptions & { client?: Gatehouse } = {}): Promise<HookResult> {
  const c = options.client ?? (defaultClient ??= new Gatehouse());
  return c.gate(request, options);
}

/** Thrown by requireApproval's wrapper when the call may not run. */
export class GatehouseDenied extends Error {
  constructor(readonly result: HookResult) {
    super(result.error || `gatehouse: denied (${result.status})`);
    this.name = "GatehouseDenied";
  }
}

/** Options of requireApproval. */
export interface RequireApprovalOptions<A> {
  /** The tool's name as approvers see it (default: the function's name). */
  toolName?: string;
  /** One line for the approver. */
  summary?: string | ((args: A) => string);
  /** The client (default: one from GATEHOUSE_URL and GATEHOUSE_TOKEN). */
  client?: Gatehouse;
  /** Other request fields (route, agent_id, ...); not idempotency_key: each call gets a key of its own. */
  request?: Omit<GateRequest, "tool_name" | "tool_args" | "summary" | "idempotency_key">;
}

/**
 * Wraps an async tool taking one argument object: each call asks Gatehouse
 * first and runs the tool only when allowed, with the approver's edited
 * arguments when there are any. Otherwise it throws GatehouseDenied and the
 * tool does not run.
 */
export function requireApproval<A extends Record<string, unknown>, R>(
  fn: (args: A) => Promise<R> | R,
  options: RequireApprovalOptions<A> = {},
): (args: A) => Promise<R> {
  const toolName = options.toolName ?? fn.name;
  if ((options.request as { idempotency_key?: unknown } | undefined)?.idempotency_key !== undefined) {
    // Given here, it would be every call's key: a later, identical call
    // would re-attach to the first one's approval, with nobody asked.
    throw new TypeError("requireApproval: request.idempotency_key would be shared by every call; each call gets a key of its own");
  }
  return async (args: A) => {
    const summary = typeof options.summary === "function" ? options.summary(args) : options.summary;
    const res = await gate(
      { ...options.request, tool_name: toolName, tool_args: args, summary },
      { client: options.client },
    );
    if (!res.allow) {
      throw new GatehouseDenied(res);
    }
    const edited = res.modified_args;
    if (edited !== null && edited !== undefined) {
      if (typeof edited !== "object" || Array.isArray(edited)) {
        throw new GatehouseDenied({ ...res, allow: false, error: "gatehouse: approved with edited arguments that are not an object; denied" });
      }
      return fn(edited as A);
    }
    return fn(args);
  };
}

/**
 * Canonical JSON: object keys sorted, so that two values can be compared
 * whatever order their keys came in.
 */
export function canonicalJSON(v: unknown): string {
  return JSON.stringify(v, (_k, x: unknown) => {
    if (typeof x === "object" && x !== null && !Array.isArray(x)) {
      return Object.fromEntries(Object.entries(x as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
    }
    return x;
  });
}

/**
 * Whether a verdict lets a call with `input` run as it is: allowed, and not
 * approved only with other arguments. The agent frameworks' approval flows
 * run the call with the arguments the model gave; an approval of edited
 * ones is not an approval of those.
 */
export function allowsAsIs(res: HookResult, input: unknown): boolean {
  if (!res.allow) {
    return false;
  }
  const edited = res.modified_args;
  return edited === null || edited === undefined || canonicalJSON(edited) === canonicalJSON(input ?? {});
}

/** The reason to tell the model of a verdict that does not let its call run as it is. */
export function denyReason(res: HookResult, input: unknown): string {
  if (res.allow && !allowsAsIs(res, input)) {
    return `Gatehouse: approved only with edited arguments ${JSON.stringify(res.modified_args)}; the call as made is not approved. Call the tool again with exactly these arguments if they still serve.`;
  }
  return res.error || `Gatehouse: denied (${res.status})`;
}

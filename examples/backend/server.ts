/**
 * A backend (an orders API) that decides what its callers may do by asking the service, with a client of its
 * own (client credentials; the SDK's createAdminClient gets and renews its token):
 *
 * - every request's bearer token is checked by **introspection** (`POST /api/v1/tokens/introspect`, HTTP
 *   Basic with the backend's client): active, of this project, whose it is, and its live permissions;
 * - the decision comes from the **decision API** (AuthZEN, `POST /access/v1/evaluation`) when the service
 *   publishes `/.well-known/authzen-configuration`, else from the introspection's permissions;
 * - `GET /me` looks the user up with
 *   **`GET /api/v1/projects/{project_id}/users/{user_id}?include_permissions=true`** (`users:read`).
 *
 * Routes: `GET /orders` (needs orders:read), `POST /orders/{id}/refund` (orders:refund), `GET /me`.
 * Each answer says which source decided (`decided_by`), so the example's runner can check it.
 */
import { ApiError, createAdminClient } from "../../sdk/src/mod.ts";

export type BackendOptions = {
  serviceUrl: string;
  projectId: string;
  clientId: string;
  clientSecret: string;
};

type Caller = { type: "user" | "client"; id: string; permissions: string[] };

export type Backend = {
  handler: (req: Request) => Promise<Response>;
  /** The decision API's evaluation endpoint, when the service has one. */
  evaluationEndpoint: string | undefined;
};

/** The AuthZEN metadata of the service: its evaluation endpoint, or undefined when it has no decision API. */
export async function discoverDecisionApi(serviceUrl: string): Promise<string | undefined> {
  const res = await fetch(`${serviceUrl}/.well-known/authzen-configuration`);
  if (res.status === 404) {
    await res.body?.cancel();
    return undefined;
  }
  if (!res.ok) throw new Error(`authzen-configuration answered ${res.status}`);
  const meta = await res.json() as { access_evaluation_endpoint?: string };
  return meta.access_evaluation_endpoint;
}

export async function createBackend(options: BackendOptions): Promise<Backend> {
  const serviceUrl = options.serviceUrl.replace(/\/+$/, "");
  const service = createAdminClient({
    baseUrl: serviceUrl,
    clientId: options.clientId,
    clientSecret: options.clientSecret,
  });
  const evaluationEndpoint = await discoverDecisionApi(serviceUrl);

  /** Who calls, from their bearer token, by introspection; undefined for no token or one not good here. */
  async function callerOf(req: Request): Promise<Caller | undefined> {
    const token = /^Bearer (\S+)$/i.exec(req.headers.get("authorization") ?? "")?.[1];
    if (!token) return undefined;
    const info = await service.tokens.introspectToken({ token, token_type_hint: "access_token" });
    if (!info.active || info.aud !== options.projectId || info.token_type !== "access_token") {
      return undefined;
    }
    // A client-credentials token is the client's own: its `sub` is its client id.
    const type = info.sub === info.client_id ? "client" : "user";
    return { type, id: info.sub!, permissions: info.permissions ?? [] };
  }

  /** May the caller do `action` on this order? Asked of the decision API when there is one. */
  async function decide(
    caller: Caller,
    action: string,
    orderId: string,
  ): Promise<{ allowed: boolean; by: string }> {
    if (!evaluationEndpoint) {
      return { allowed: caller.permissions.includes(`orders:${action}`), by: "introspection" };
    }
    const res = await fetch(evaluationEndpoint, {
      method: "POST",
      headers: { authorization: `Bearer ${await service.accessToken()}`, "content-type": "application/json" },
      body: JSON.stringify({
        subject: { type: caller.type, id: caller.id },
        action: { name: action },
        resource: { type: "orders", id: orderId },
      }),
    });
    if (!res.ok) throw new Error(`the decision API answered ${res.status}: ${await res.text()}`);
    const decision = await res.json() as { decision: boolean };
    return { allowed: decision.decision === true, by: "decision API" };
  }

  const handler = async (req: Request): Promise<Response> => {
    const url = new URL(req.url);
    try {
      const caller = await callerOf(req);
      if (!caller) return json({ error: "unauthorized" }, 401, { "www-authenticate": "Bearer" });

      if (req.method === "GET" && url.pathname === "/me") {
        if (caller.type === "client") {
          return json({ client_id: caller.id, permissions: caller.permissions }, 200);
        }
        // The user's record and live permissions, with the backend's own token (users:read).
        const user = await service.users.getUser(options.projectId, caller.id, true);
        return json({
          id: user.id,
          name: user.display_name,
          email: user.email,
          permissions: user.permissions,
        }, 200);
      }
      if (req.method === "GET" && url.pathname === "/orders") {
        const { allowed, by } = await decide(caller, "read", "*");
        if (!allowed) return json({ error: "forbidden", decided_by: by }, 403);
        return json({ orders: [{ id: "1001", total: 42 }, { id: "1002", total: 7 }], decided_by: by }, 200);
      }
      const refund = /^\/orders\/([\w-]+)\/refund$/.exec(url.pathname);
      if (req.method === "POST" && refund) {
        const { allowed, by } = await decide(caller, "refund", refund[1]);
        if (!allowed) return json({ error: "forbidden", decided_by: by }, 403);
        return json({ refunded: refund[1], decided_by: by }, 200);
      }
      return json({ error: "not_found" }, 404);
    } catch (err) {
      // The service unreachable or refusing the backend's own client: never guess "allowed".
      console.error(err instanceof ApiError ? `${err.status} ${err.code}: ${err.error_description}` : err);
      return json({ error: "unavailable" }, 503);
    }
  };
  return { handler, evaluationEndpoint };
}

function json(body: unknown, status: number, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });
}

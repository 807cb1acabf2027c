/**
 * createObjectsClient: a project's objects and the roles granted on them (docs/objects-and-grants.md), typed,
 * with named options instead of the generated classes' positional ones, and every page of a list on demand.
 * Every failed call rejects with an ApiError.
 */
import { ApiError } from "./errors.ts";
import type { Api } from "./generated/models.ts";
import type { Wire } from "./wire.ts";

export type ObjectRecord = Api.Object;
export type Grant = Api.Grant;
export type Pagination = Wire<Api.Pagination>;
export type Page<T> = { data: T[]; pagination: Pagination };

export type NewObject = Wire<Api.CreateObjectRequest>;
export type ObjectChange = Wire<Api.UpdateObjectRequest>;
export type ObjectQuery = {
  page_num?: number;
  page_size?: number;
  sort_by?: `${Api.ListObjectsSortByEnum}`;
  sort_dir?: `${Api.ListObjectsSortDirEnum}`;
  search?: string;
  /** Only the children of this object. */
  parent_id?: string;
  /** Only the objects without parent. */
  top_level?: boolean;
  /** Only the objects of this organization. */
  organization_id?: string;
};

export type NewGrant = Omit<Wire<Api.CreateGrantRequest>, "expires_at"> & {
  /** RFC 3339, in the future; omitted: never expires. */
  expires_at?: string | Date | null;
};
export type GrantQuery = {
  page_num?: number;
  page_size?: number;
  sort_by?: `${Api.ListGrantsSortByEnum}`;
  sort_dir?: `${Api.ListGrantsSortDirEnum}`;
  subject_type?: `${Api.ListGrantsSubjectTypeEnum}`;
  subject_id?: string;
  role_id?: string;
  object_type?: string;
  object_id?: string;
  include_expired?: boolean;
};

export type ObjectsClient = {
  /** Registers one object of the resource. */
  create(resourceId: string, object: NewObject): Promise<ObjectRecord>;
  /** Registers up to 1000 objects at once, all or none (parents anywhere in the batch). */
  createMany(resourceId: string, objects: NewObject[]): Promise<ObjectRecord[]>;
  get(resourceId: string, objectId: string): Promise<ObjectRecord>;
  list(resourceId: string, query?: ObjectQuery): Promise<Page<ObjectRecord>>;
  /** Every object the query matches, page after page. */
  all(
    resourceId: string,
    query?: Omit<ObjectQuery, "page_num">,
  ): AsyncGenerator<ObjectRecord>;
  /** Renames it, or moves it (with its descendants) under another parent (`parent_id: null`: to the top). */
  update(
    resourceId: string,
    objectId: string,
    change: ObjectChange,
  ): Promise<ObjectRecord>;
  /** Deletes it with its grants; `cascade` also its descendants (else 409 when it has children). */
  delete(
    resourceId: string,
    objectId: string,
    opts?: { cascade?: boolean },
  ): Promise<void>;
};

export type GrantsClient = {
  /** Grants a role on an object (and its descendants), optionally until `expires_at`. */
  create(grant: NewGrant): Promise<Grant>;
  get(grantId: string): Promise<Grant>;
  list(query?: GrantQuery): Promise<Page<Grant>>;
  /** Every grant the query matches, page after page. */
  all(query?: Omit<GrantQuery, "page_num">): AsyncGenerator<Grant>;
  /** Revokes it: the subject loses what it gave on its next decision. */
  delete(grantId: string): Promise<void>;
};

export type ObjectsClientOptions = {
  /** The service's address, e.g. `https://auth.example.com`. */
  baseUrl: string;
  /** The project whose objects and grants these are. */
  projectId: string;
  /** The bearer token to send, or a function giving it (e.g. an admin client's `accessToken`). */
  token: string | (() => Promise<string>);
  /** The fetch to send requests with; the platform's by default. */
  fetch?: (url: string, init: RequestInit) => Promise<Response>;
};

function queryString(q: Record<string, unknown> = {}): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(q)) {
    if (v !== undefined && v !== null) params.set(k, String(v));
  }
  const s = params.toString();
  return s ? `?${s}` : "";
}

export function createObjectsClient(
  options: ObjectsClientOptions,
): { objects: ObjectsClient; grants: GrantsClient } {
  const base = `${options.baseUrl.replace(/\/+$/, "")}/api/v1/projects/${
    encodeURIComponent(options.projectId)
  }`;
  const send = options.fetch ??
    ((url: string, init: RequestInit) => fetch(url, init));
  const token = typeof options.token === "string"
    ? () => Promise.resolve(options.token as string)
    : options.token;

  async function call<T>(
    method: string,
    path: string,
    body?: unknown,
  ): Promise<T> {
    const response = await send(`${base}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${await token()}`,
        accept: "application/json",
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (!response.ok) throw await ApiError.fromResponse(response);
    if (response.status === 204) {
      await response.body?.cancel();
      return undefined as T;
    }
    return await response.json() as T;
  }

  async function* pages<T>(
    list: (page: number) => Promise<Page<T>>,
  ): AsyncGenerator<T> {
    for (let page = 1;; page++) {
      const answer = await list(page);
      yield* answer.data;
      if (
        answer.data.length === 0 ||
        page * answer.pagination.page_size >= answer.pagination.total
      ) return;
    }
  }

  const objectsOf = (resourceId: string) => `/resources/${encodeURIComponent(resourceId)}/objects`;
  const objectPath = (resourceId: string, objectId: string) =>
    `${objectsOf(resourceId)}/${encodeURIComponent(objectId)}`;

  const objects: ObjectsClient = {
    create: (resourceId, object) => call("POST", objectsOf(resourceId), object),
    createMany: async (resourceId, list) =>
      (await call<{ data: ObjectRecord[] }>(
        "POST",
        `${objectsOf(resourceId)}/batch`,
        { objects: list },
      ))
        .data,
    get: (resourceId, objectId) => call("GET", objectPath(resourceId, objectId)),
    list: (resourceId, query) => call("GET", `${objectsOf(resourceId)}${queryString(query)}`),
    all: (resourceId, query = {}) =>
      pages((page_num) => objects.list(resourceId, { page_size: 100, ...query, page_num })),
    update: (resourceId, objectId, change) => call("PUT", objectPath(resourceId, objectId), change),
    delete: (resourceId, objectId, opts = {}) =>
      call(
        "DELETE",
        `${objectPath(resourceId, objectId)}${queryString({ cascade: opts.cascade })}`,
      ),
  };

  const grants: GrantsClient = {
    create: (grant) =>
      call("POST", "/grants", {
        ...grant,
        expires_at: grant.expires_at instanceof Date ? grant.expires_at.toISOString() : grant.expires_at,
      }),
    get: (grantId) => call("GET", `/grants/${encodeURIComponent(grantId)}`),
    list: (query) => call("GET", `/grants${queryString(query)}`),
    all: (query = {}) => pages((page_num) => grants.list({ page_size: 100, ...query, page_num })),
    delete: (grantId) => call("DELETE", `/grants/${encodeURIComponent(grantId)}`),
  };

  return { objects, grants };
}

/** GET and PUT /api/v1/users/current (§4.13): the token's own user, with a valid token and nothing more. */
import assert from "node:assert/strict";
import { expectError, http, loginProject, sdk, service, test, userTokens } from "./helpers.ts";

test("GET /api/v1/users/current returns the user's profile and live permissions", async () => {
  const p = await loginProject();
  const t = await userTokens(p);
  const me = await (await sdk(t.access_token)).users.getCurrentUser();
  assert.equal(me.id, p.userId);
  assert.equal(me.email, p.email);
  assert.deepEqual(me.permissions, []);
  assert.equal((me as unknown as Record<string, unknown>).password_hash, undefined);
});

test("PUT /api/v1/users/current: §4.13 rules, limits, and a client token has no user", async () => {
  const p = await loginProject();
  const t = await userTokens(p);
  const api = (await sdk(t.access_token)).users;
  const { db } = await service();
  const hash = async () =>
    (await db.sql<{ h: string }[]>`select password_hash as h from users where id = ${p.userId}`)[0].h;
  const before = await hash();
  let me = await api.updateCurrentUser({
    display_name: "Me",
    email: ` ${p.email.toUpperCase()} `,
    avatar_url: "https://img.example/me.png",
    password: "",
  });
  assert.equal(me.display_name, "Me");
  assert.equal(me.email, p.email);
  assert.equal(me.avatar_url, "https://img.example/me.png");
  assert.equal(await hash(), before, "an empty password keeps it");
  me = await api.updateCurrentUser({ display_name: "Me", email: p.email });
  assert.equal(me.avatar_url, "https://img.example/me.png", "omitted keeps the avatar");
  me = await api.updateCurrentUser({ display_name: "Me", email: p.email, avatar_url: null });
  assert.equal(me.avatar_url, null);
  for (
    const body of [
      { display_name: "x".repeat(51), email: p.email },
      { display_name: "x" },
      { display_name: "x", email: "not-an-email" },
      { display_name: "x", email: `${"e".repeat(89)}@example.com` },
      { display_name: "x", email: p.email, password: "short" },
      { display_name: "x", email: p.email, avatar_url: "nope" },
    ]
  ) {
    await expectError(
      api.updateCurrentUser(body as { display_name: string; email: string }),
      400,
      "invalid_params",
    );
  }
  await p.api.users.createUser(p.project.id, {
    display_name: "t",
    email: "taken@example.com",
    password: "12345678",
  });
  await expectError(
    api.updateCurrentUser({ display_name: "x", email: "TAKEN@example.com", current_password: p.password }),
    409,
    "user_email_already_used",
  );
  // A client-credentials token has no user.
  await expectError(p.api.users.getCurrentUser(), 404, "user_not_found");
  await expectError(
    p.api.users.updateCurrentUser({ display_name: "x", email: "c@example.com" }),
    404,
    "user_not_found",
  );
  await expectError(await http("/api/v1/users/current"), 401, "invalid_authorization_token");
});

test("a new password through /users/current keeps this session and ends the user's others", async () => {
  const p = await loginProject();
  const mine = await userTokens(p);
  const elsewhere = await userTokens(p);
  await (await sdk(mine.access_token)).users.updateCurrentUser({
    display_name: "x",
    email: p.email,
    password: "brand new password",
    current_password: p.password,
  });
  assert.equal((await (await sdk(mine.access_token)).users.getCurrentUser()).id, p.userId);
  await expectError(
    (await sdk(elsewhere.access_token)).users.getCurrentUser(),
    401,
    "invalid_authorization_token",
  );
  assert.ok(await userTokens({ ...p, password: "brand new password" }));
});

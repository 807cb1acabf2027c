// Passkeys on the login, second-step and account pages (served from this origin: the pages' CSP allows no
// inline script). The element #passkey carries where to ask for options and where to send the answer; it is
// shown only where the browser has WebAuthn.
(() => {
  const el = document.getElementById("passkey");
  if (!el || !globalThis.PublicKeyCredential) return;
  el.hidden = false;
  const enc = (buf) =>
    btoa(String.fromCharCode(...new Uint8Array(buf))).replace(/\+/g, "-").replace(/\//g, "_").replace(
      /=+$/,
      "",
    );
  const dec = (s) => Uint8Array.from(atob(s.replace(/-/g, "+").replace(/_/g, "/")), (c) => c.charCodeAt(0));
  const error = document.getElementById("passkey-error");
  const fail = (message) => {
    error.textContent = message;
    error.hidden = false;
  };
  const post = async (url, body) => {
    const res = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      credentials: "same-origin",
      body: JSON.stringify(body),
    });
    const answer = await res.json().catch(() => ({}));
    // A sign-in the project stops until the address is verified: its page, which offers the link.
    if (res.status === 403 && answer.location) location.assign(answer.location);
    if (!res.ok) throw new Error(answer.error_description || "The passkey was refused.");
    return answer;
  };
  const base = { request_id: el.dataset.requestId, csrf: el.dataset.csrf, project: el.dataset.project };
  el.querySelector("button").addEventListener("click", async () => {
    error.hidden = true;
    try {
      const password = document.getElementById("passkey-password");
      const code = document.getElementById("passkey-code");
      const o = await post(el.dataset.options, {
        ...base,
        ...(password ? { current_password: password.value } : {}),
        ...(code && code.value ? { code: code.value } : {}),
      });
      if (el.dataset.mode === "register") {
        const name = document.getElementById("passkey-name");
        const cred = await navigator.credentials.create({
          publicKey: {
            ...o,
            challenge: dec(o.challenge),
            user: { ...o.user, id: dec(o.user.id) },
            excludeCredentials: o.excludeCredentials.map((c) => ({ ...c, id: dec(c.id) })),
          },
        });
        const done = await post(el.dataset.verify, {
          ...base,
          name: name ? name.value : "",
          id: cred.id,
          clientDataJSON: enc(cred.response.clientDataJSON),
          attestationObject: enc(cred.response.attestationObject),
        });
        location.assign(done.location);
      } else {
        const cred = await navigator.credentials.get({
          publicKey: {
            ...o,
            challenge: dec(o.challenge),
            allowCredentials: o.allowCredentials.map((c) => ({ ...c, id: dec(c.id) })),
          },
        });
        const done = await post(el.dataset.verify, {
          ...base,
          id: cred.id,
          clientDataJSON: enc(cred.response.clientDataJSON),
          authenticatorData: enc(cred.response.authenticatorData),
          signature: enc(cred.response.signature),
          userHandle: cred.response.userHandle ? enc(cred.response.userHandle) : null,
        });
        location.assign(done.location);
      }
    } catch (err) {
      fail(
        err && err.name === "NotAllowedError"
          ? "The passkey was cancelled or timed out."
          : String(err.message),
      );
    }
  });
})();

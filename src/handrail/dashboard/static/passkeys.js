// Passkeys (WebAuthn): registering one, and signing a decision's challenge with it.
// The server makes the options and checks the answers; this only carries them across.
"use strict";

function fromB64url(text) {
  const b64 = text.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((text.length + 3) % 4);
  return Uint8Array.from(atob(b64), (c) => c.charCodeAt(0)).buffer;
}

function toB64url(buffer) {
  let text = "";
  for (const byte of new Uint8Array(buffer)) text += String.fromCharCode(byte);
  return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

async function optionsFrom(form, url) {
  const body = new URLSearchParams({ csrf: form.elements.csrf.value });
  const answer = await fetch(url, { method: "POST", body, credentials: "same-origin" });
  const data = await answer.json();
  if (!answer.ok) throw new Error(data.error || "the server refused");
  return data;
}

function failed(id, error) {
  const shown = document.getElementById(id);
  shown.textContent = String(error && error.message ? error.message : error);
  shown.hidden = false;
}

async function register(form) {
  const options = await optionsFrom(form, form.dataset.options);
  options.challenge = fromB64url(options.challenge);
  options.user.id = fromB64url(options.user.id);
  for (const c of options.excludeCredentials || []) c.id = fromB64url(c.id);
  const made = await navigator.credentials.create({ publicKey: options });
  form.elements.credential.value = JSON.stringify({
    id: made.id,
    rawId: toB64url(made.rawId),
    type: made.type,
    response: {
      clientDataJSON: toB64url(made.response.clientDataJSON),
      attestationObject: toB64url(made.response.attestationObject),
      transports: made.response.getTransports ? made.response.getTransports() : [],
    },
    clientExtensionResults: {},
  });
  form.submit();
}

async function sign(form) {
  const options = await optionsFrom(form, form.dataset.challenge);
  options.challenge = fromB64url(options.challenge);
  for (const c of options.allowCredentials || []) c.id = fromB64url(c.id);
  const got = await navigator.credentials.get({ publicKey: options });
  const r = got.response;
  form.elements.assertion.value = JSON.stringify({
    id: got.id,
    rawId: toB64url(got.rawId),
    type: got.type,
    response: {
      authenticatorData: toB64url(r.authenticatorData),
      clientDataJSON: toB64url(r.clientDataJSON),
      signature: toB64url(r.signature),
      userHandle: r.userHandle ? toB64url(r.userHandle) : null,
    },
    clientExtensionResults: {},
  });
  form.submit();
}

document.addEventListener("DOMContentLoaded", () => {
  const adding = document.getElementById("register-form");
  if (adding) {
    document.getElementById("add-passkey").addEventListener("click", () => {
      register(adding).catch((e) => failed("register-error", e));
    });
  }
  const signing = document.getElementById("sign-form");
  if (signing) {
    document.getElementById("sign").addEventListener("click", () => {
      sign(signing).catch((e) => failed("sign-error", e));
    });
  }
});

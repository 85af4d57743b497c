// The control API under /v1/: JSON in and out. A listener with control.token answers 401 until the page sends
// the token; the page then asks for it once, keeps it for the tab (sessionStorage) and retries.

const TOKEN_KEY = "minibroker.token";
let tokenWanted = null; // the pending question for the token, shared by every request that met a 401

export class ApiError extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

function authHeaders() {
  const token = sessionStorage.getItem(TOKEN_KEY);
  return token ? { Authorization: `Bearer ${token}` } : {};
}

export async function api(url, { method = "GET", body } = {}) {
  const headers = authHeaders();
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const answer = await fetch(url, {
    method, headers, cache: "no-store", body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await answer.text();
  let value = null;
  try {
    value = text ? JSON.parse(text) : null;
  } catch {
    value = { error: text };
  }
  if (answer.status === 401) {
    await askForToken(value?.error ?? "a bearer token is required");
    return api(url, { method, body });
  }
  if (!answer.ok) throw new ApiError(answer.status, value?.error ?? answer.statusText);
  return value;
}

function askForToken(reason) {
  if (tokenWanted) return tokenWanted;
  const form = document.getElementById("token-form");
  const input = document.getElementById("token-input");
  document.getElementById("token-reason").textContent = sessionStorage.getItem(TOKEN_KEY) ? `(${reason})` : "";
  form.hidden = false;
  input.focus();
  tokenWanted = new Promise((resolve) => {
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      sessionStorage.setItem(TOKEN_KEY, input.value.trim());
      input.value = "";
      form.hidden = true;
      tokenWanted = null;
      resolve();
    }, { once: true });
  });
  return tokenWanted;
}

// Saves an API answer as a file: a plain link would not carry the token, so the page fetches it and hands the
// browser the bytes.
export async function download(url, filename) {
  const answer = await fetch(url, { headers: authHeaders(), cache: "no-store" });
  if (!answer.ok) throw new ApiError(answer.status, (await answer.text()) || answer.statusText);
  const blobUrl = URL.createObjectURL(await answer.blob());
  const anchor = document.createElement("a");
  anchor.href = blobUrl;
  anchor.download = filename;
  document.body.append(anchor);
  anchor.click();
  anchor.remove();
  setTimeout(() => URL.revokeObjectURL(blobUrl), 10_000);
}

/*
 * Gatehouse passkeys, in the browser: the dashboard's "Add a passkey", Rename and Remove, and the
 * sign-in page's "Sign in with a passkey". Served as /assets/passkeys.js right after the bundle
 * of @simplewebauthn/browser (which defines `SimpleWebAuthnBrowser`), under the page's CSP nonce;
 * it calls our own JSON API only, with the page's CSRF token. Without WebAuthn in the browser it
 * does nothing and the passkey buttons stay hidden; the Rename and Remove forms then post as
 * plain forms. It holds no text of its own: what it says comes, in the page's language, from the
 * section's `data-texts` (JSON written by the server; `{name}` and `{code}` are for it to fill in).
 */
(() => {
  'use strict';
  const webauthn = globalThis.SimpleWebAuthnBrowser;
  if (webauthn === undefined || !webauthn.browserSupportsWebAuthn()) return;

  const NOTICE_KEY = 'gatehouse.passkeys.notice';

  /** The section's texts (`data-texts`); none if it has none (the script then says nothing). */
  function textsOf(element) {
    try {
      const texts = JSON.parse(element.dataset.texts || '{}');
      return texts !== null && typeof texts === 'object' ? texts : {};
    } catch {
      return {};
    }
  }

  /** `text` with its `{name}` / `{code}` placeholders filled in, in one pass (a filled-in value is never read again). */
  function fill(text, values) {
    return String(text || '').replace(/\{(name|code)\}/g, (placeholder, key) => (Object.hasOwn(values, key) ? String(values[key]) : placeholder));
  }

  /** A JSON call to our API; throws an Error with `code` (the API's error code) on a refusal. */
  async function call(method, url, csrfToken, body) {
    const headers = { accept: 'application/json', 'x-csrf-token': csrfToken };
    const init = { method, headers, credentials: 'same-origin' };
    if (body !== undefined) {
      headers['content-type'] = 'application/json';
      init.body = JSON.stringify(body);
    }
    const response = await fetch(url, init);
    let data = null;
    try {
      data = await response.json();
    } catch {
      // not JSON: described below by its status
    }
    if (!response.ok) {
      const error = new Error((data && data.message) || `HTTP ${response.status}`);
      error.code = (data && data.error) || `HTTP_${response.status}`;
      throw error;
    }
    return data;
  }

  /** What to tell the person about `error` (in `texts`): the browser's or the authenticator's refusal, or the API's. */
  function describe(texts, error) {
    const errors = texts.errors || {};
    const code = error && error.code;
    if (code === 'ERROR_AUTHENTICATOR_PREVIOUSLY_REGISTERED' || (error && error.name === 'InvalidStateError')) return errors.deviceHasPasskey;
    if (error && (error.name === 'NotAllowedError' || error.name === 'AbortError')) return errors.cancelled;
    if (error && error.name === 'SecurityError') return errors.insecureAddress;
    if (typeof code === 'string' && /^[A-Z][A-Z0-9_]*$/.test(code)) return Object.hasOwn(errors, code) ? errors[code] : fill(texts.errorWithCode, { code });
    return texts.errorDefault;
  }

  /**
   * Where to go after signing in: the page gives its callback already judged by the server (a path
   * of ours, or a URL on one of TRUSTED_ORIGINS, serialised); this is belt and braces: a path that
   * stays on this origin, or an http(s) URL exactly as serialised and without credentials.
   */
  function safeTarget(value) {
    if (typeof value !== 'string') return '/dashboard';
    if (/^\/(?![/\\])/.test(value)) return value;
    try {
      const url = new URL(value);
      if ((url.protocol === 'https:' || url.protocol === 'http:') && url.href === value && url.username === '' && url.password === '') return value;
    } catch {
      // not a URL
    }
    return '/dashboard';
  }

  /** Reloads the page (without a query or fragment, so it always loads) and says `notice` there. */
  function reloadWith(notice) {
    try {
      if (notice) sessionStorage.setItem(NOTICE_KEY, notice);
    } catch {
      // storage refused: the reloaded list says enough
    }
    window.location.assign(window.location.pathname);
  }

  function manage(section) {
    const csrfToken = section.dataset.csrfToken || '';
    const texts = textsOf(section);
    const status = section.querySelector('[data-passkey-status]');
    const say = (text) => {
      status.textContent = text || '';
    };

    let notice = null;
    try {
      notice = sessionStorage.getItem(NOTICE_KEY);
      sessionStorage.removeItem(NOTICE_KEY);
    } catch {
      // no storage: no notice
    }
    if (notice) {
      section.scrollIntoView({ block: 'start' });
      // A live region announces changes, not what a page loaded with.
      setTimeout(() => say(notice), 150);
    }

    const addBox = section.querySelector('[data-passkey-add]');
    const addForm = section.querySelector('form[data-passkey-register]');
    const addButton = addForm.querySelector('button[type="submit"]');
    const nameInput = addForm.querySelector('input[name="name"]');
    const codesBox = section.querySelector('[data-passkey-codes]');
    addBox.hidden = false;

    addForm.addEventListener('submit', async (event) => {
      event.preventDefault();
      if (addButton.disabled) return;
      addButton.disabled = true;
      say(texts.creating);
      try {
        const optionsJSON = await call('POST', '/api/auth/passkeys/register/options', csrfToken, {});
        const response = await webauthn.startRegistration({ optionsJSON });
        const name = nameInput.value.trim();
        const result = await call('POST', '/api/auth/passkeys/register/verify', csrfToken, name === '' ? { response } : { response, name });
        const added = fill(texts.added, { name: result.passkey.name });
        if (Array.isArray(result.recoveryCodes)) {
          const list = codesBox.querySelector('[data-passkey-code-list]');
          list.replaceChildren(...result.recoveryCodes.map((code) => Object.assign(document.createElement('li'), { textContent: code })));
          addBox.hidden = true;
          codesBox.hidden = false;
          say(fill(texts.addedWithCodes, { name: result.passkey.name }));
          codesBox.querySelector('[tabindex="-1"]').focus();
          codesBox.querySelector('[data-passkey-codes-done]').addEventListener('click', () => reloadWith(added), { once: true });
          return;
        }
        reloadWith(added);
      } catch (error) {
        say(describe(texts, error));
      } finally {
        addButton.disabled = false;
      }
    });

    for (const form of section.querySelectorAll('form[data-passkey-action]')) {
      form.addEventListener('submit', async (event) => {
        event.preventDefault();
        const id = form.querySelector('input[name="id"]').value;
        const url = `/api/auth/passkeys/${encodeURIComponent(id)}`;
        try {
          if (form.dataset.passkeyAction === 'rename') {
            const result = await call('PATCH', url, csrfToken, { name: form.querySelector('input[name="name"]').value });
            reloadWith(fill(texts.renamed, { name: result.passkey.name }));
          } else {
            await call('DELETE', url, csrfToken);
            reloadWith(texts.removed);
          }
        } catch (error) {
          say(describe(texts, error));
        }
      });
    }
  }

  function offerSignIn(box) {
    const csrfToken = box.dataset.csrfToken || '';
    const callbackUrl = safeTarget(box.dataset.callbackUrl);
    const texts = textsOf(box);
    const button = box.querySelector('[data-passkey-signin]');
    const status = box.querySelector('[data-passkey-status]');
    const say = (text) => {
      status.textContent = text || '';
    };
    box.hidden = false;

    button.addEventListener('click', async () => {
      if (button.disabled) return;
      button.disabled = true;
      say(texts.using);
      try {
        // On the second-factor page, the sign-in waiting there (its token is in an HttpOnly cookie).
        const fromChallenge = box.dataset.fromChallenge === 'true' ? { fromChallenge: true } : {};
        // "Don't ask again on this browser", when the page offers it beside the button, as the code forms send it.
        const remember = box.querySelector('input[name="rememberDevice"]');
        const rememberDevice = fromChallenge.fromChallenge && remember !== null && remember.checked ? { rememberDevice: true } : {};
        const optionsJSON = await call('POST', '/api/auth/passkeys/authenticate/options', csrfToken, fromChallenge);
        const response = await webauthn.startAuthentication({ optionsJSON });
        await call('POST', '/api/auth/passkeys/authenticate/verify', csrfToken, { response, ...fromChallenge, ...rememberDevice });
        say(texts.signedIn);
        window.location.assign(callbackUrl);
      } catch (error) {
        say(describe(texts, error));
        button.disabled = false;
      }
    });
  }

  for (const section of document.querySelectorAll('[data-passkeys="manage"]')) manage(section);
  for (const box of document.querySelectorAll('[data-passkeys="signin"]')) offerSignIn(box);
})();

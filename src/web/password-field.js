// Password fields (an element with data-password-field around one password input): a button that
// shows and hides the password, and a polite "Caps Lock is on" hint tied to the input. Inlined into
// the pages that have such a field and allowed by its hash (web/render.ts); the texts come from this
// script's own data-* attributes. Without it the form is the same form: nothing here is needed.
(() => {
  const texts = document.currentScript.dataset;
  for (const field of document.querySelectorAll('[data-password-field]')) {
    const input = field.querySelector('input[type="password"]');
    if (input === null || input.id === '') continue;
    const toggle = document.createElement('button');
    toggle.type = 'button';
    toggle.className = 'button button-secondary password-toggle';
    toggle.setAttribute('aria-controls', input.id);
    toggle.textContent = texts.show;
    const hint = document.createElement('p');
    hint.className = 'hint caps-lock-hint';
    hint.id = `${input.id}-caps-lock`;
    hint.setAttribute('aria-live', 'polite');
    input.after(toggle, hint);
    input.setAttribute('aria-describedby', `${input.getAttribute('aria-describedby') ?? ''} ${hint.id}`.trim());
    field.classList.add('has-password-toggle');

    const show = (isShown) => {
      input.type = isShown ? 'text' : 'password';
      toggle.textContent = isShown ? texts.hide : texts.show;
    };
    toggle.addEventListener('click', () => show(input.type === 'password'));
    // A shown password is hidden again before it is sent: browsers then save it as a password.
    input.form?.addEventListener('submit', () => show(false));

    const capsLock = (event) => {
      const text = event.getModifierState?.('CapsLock') ? texts.capsLock : '';
      if (hint.textContent !== text) hint.textContent = text;
    };
    input.addEventListener('keydown', capsLock);
    input.addEventListener('keyup', capsLock);
    input.addEventListener('blur', () => {
      hint.textContent = '';
    });
  }
})();

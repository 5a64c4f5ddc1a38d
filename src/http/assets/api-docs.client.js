/*
 * Gatehouse's API reference page (`GET /api/docs`): starts Swagger UI (`swagger-ui-bundle.js`, loaded
 * just before this file under the page's CSP nonce) on the OpenAPI document the page names in
 * `data-url`. Everything it loads comes from this origin: no validator badge, no query-string
 * `?url=` (a link cannot make the page show another document).
 */
(() => {
  'use strict';
  const root = document.getElementById('swagger-ui');
  const bundle = globalThis.SwaggerUIBundle;
  if (root === null || bundle === undefined) return;
  bundle({
    url: root.dataset.url,
    domNode: root,
    layout: 'BaseLayout',
    presets: [bundle.presets.apis],
    deepLinking: true,
    queryConfigEnabled: false,
    validatorUrl: null,
    displayOperationId: true,
    defaultModelsExpandDepth: 0,
    docExpansion: 'list',
  });
})();

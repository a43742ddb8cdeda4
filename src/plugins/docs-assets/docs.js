// Usher's plugin for Swagger UI on the docs page. Loaded by the page (the `theme.js` option of
// @fastify/swagger-ui) before Swagger UI starts, which then finds it in its `plugins` (openapi.ts).

/** The address this page was served from, without its `/docs`. */
function pageServer() {
  return `${location.origin}${location.pathname.replace(/\/docs\/?$/, '')}`;
}

/**
 * "Try it out" must call the server that served this page: the page's CSP lets it call no other,
 * and the document's server, PUBLIC_URL, can be another name for this one (localhost where the
 * page was opened at 127.0.0.1) or the address of an app in front of Usher. When the document
 * names another server, the page offers its own instead, and says so.
 */
function withPageServer(document) {
  const here = pageServer();
  const servers = Array.isArray(document?.servers) ? document.servers : [];
  const isHere = (server) => new URL(server.url, location.href).href.replace(/\/+$/, '') === here;
  if (servers.length === 0 || servers.some(isHere)) return document;
  const named = servers.map((server) => server.url).join(', ');
  return {
    ...document,
    servers: [{ url: here, description: `The server of this page (the document names ${named}).` }],
  };
}

window.usherDocsPlugin = () => ({
  // Swagger UI's own top-bar logo is an SVG with an inline <style>, which the page's CSP refuses;
  // the `logo` option puts Usher's into the link this leaves empty.
  components: { Logo: () => null },
  statePlugins: {
    spec: {
      wrapActions: { updateJsonSpec: (original) => (document) => original(withPageServer(document)) },
    },
  },
});

/**
 * Names for the few controls Swagger UI renders without one (axe-core: image-alt, label,
 * select-name, button-name), and accessible names that start with the words the button shows
 * (label-content-name-mismatch: a speech user says what they see). Swagger UI re-renders as the
 * reader opens things, so every change to the page is looked at; each fix is made once per node.
 */
const NAMES = [
  ['.topbar a.link img:not([alt])', 'alt', 'Usher'],
  ['#download-url-input:not([aria-label])', 'aria-label', 'Address of the OpenAPI document'],
  ['#servers:not([aria-label])', 'aria-label', 'Server to send requests to'],
  ['.dialog-ux .close-modal:not([aria-label])', 'aria-label', 'Close'],
  ['.examples-select-element:not([aria-label])', 'aria-label', 'Example to show'],
  ['textarea.body-param__text:not([aria-label])', 'aria-label', 'Request body (JSON)'],
];

function nameControls(root) {
  for (const [selector, attribute, value] of NAMES) {
    for (const node of root.querySelectorAll(selector)) node.setAttribute(attribute, value);
  }
  for (const button of root.querySelectorAll('button[aria-label]')) {
    const shown = button.textContent.trim();
    const label = button.getAttribute('aria-label');
    if (shown && !label.toLowerCase().startsWith(shown.toLowerCase()))
      button.setAttribute('aria-label', `${shown}: ${label.charAt(0).toLowerCase()}${label.slice(1)}`);
  }
}

new MutationObserver(() => nameControls(document)).observe(document.documentElement, {
  childList: true,
  subtree: true,
});

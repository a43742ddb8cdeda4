// The settings this app reads at build time (Vite puts VITE_* variables into import.meta.env).
interface ImportMetaEnv {
  /** Where Usher is, e.g. https://auth.example.com; unset when the page is served from Usher's origin. */
  readonly VITE_USHER_URL?: string;
}

interface ImportMeta {
  readonly env: ImportMetaEnv;
}

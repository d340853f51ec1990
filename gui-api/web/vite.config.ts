// The console's build: hashed file names under assets/ (ndd-gui-api caches them for a year),
// no inline script (the CSP forbids it), no module-preload polyfill injected into the HTML.
import { defineConfig } from 'vite';

export default defineConfig({
  esbuild: { jsx: 'automatic', jsxImportSource: 'preact' },
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    assetsInlineLimit: 0,
    modulePreload: { polyfill: false },
    sourcemap: false,
    target: 'es2020',
  },
  server: { proxy: { '/api': 'http://127.0.0.1:9108', '/console': 'http://127.0.0.1:9108' } },
});

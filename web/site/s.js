// s.js - the entry of shortd's page script, served at /s.js: the build
// (scripts/build-site-script.mjs, esbuild) bundles it with tracker.js and
// beacon.js into one minified file. Installed on a site as
//
//   <script defer src="https://SHORTD/s.js"></script>
//
// and, for custom events called before it loads,
//
//   window.shortd = window.shortd || function () { (shortd.q = shortd.q || []).push(arguments); };
import { start } from './tracker.js';

start(window);

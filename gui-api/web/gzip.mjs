// Writes NAME.gz next to every text file of dist/ so ndd-gui-api serves them compressed
// without compressing per request.
import { readdirSync, readFileSync, writeFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';

function walk(dir) {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) walk(p);
    else if (/\.(html|js|css|svg|json)$/.test(name))
      writeFileSync(p + '.gz', gzipSync(readFileSync(p), { level: 9 }));
  }
}
walk(process.argv[2] || 'dist');

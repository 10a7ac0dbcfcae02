import fs from 'node:fs';
import { allOperations } from '../api/app.js';
import { buildDocument } from '../api/openapi/document.js';
import { config } from '../shared/config.js';

// `npm run openapi [file]`: writes the OpenAPI document the api serves at /openapi.json (stdout without a
// file). `npm run lint:openapi` lints it with Redocly's recommended rules (redocly.yaml).
const json = `${JSON.stringify(buildDocument(allOperations(), config().PUBLIC_BASE_URL), null, 2)}\n`;
const out = process.argv[2];
if (out) fs.writeFileSync(out, json);
else process.stdout.write(json);

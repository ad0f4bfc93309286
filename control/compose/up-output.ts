/** What `cornserve up` prints: where things are, the admin token (once, when generated), how to call each app. */
import type { AppEntry } from '../gateway/app-manager.js';
import type { Io } from '../../lib/io.js';

const shellQuote = (s: string) => `'${s.replaceAll("'", `'\\''`)}'`;

export function printBanner(cs: { gatewayUrl: string; dispatcherUrl: string; dispatchMode: string; functionHop: string; adminToken: string; generatedToken: boolean; store: { constructor: { name: string } } }, io: Io): void {
  io.out(`Cornserve is up: gateway ${cs.gatewayUrl}  (dispatcher ${cs.dispatcherUrl}, store ${cs.store.constructor.name}, app functions called over ${cs.functionHop === 'link' ? 'the framed link' : 'HTTP'} and dispatch ${cs.dispatchMode})`);
  if (cs.generatedToken) {
    io.out('');
    io.out('Admin token (generated for this run; set CORNSERVE_ADMIN_TOKEN to choose your own):');
    io.out(`  export CORNSERVE_ADMIN_TOKEN=${cs.adminToken}`);
  }
  io.out('');
  io.out('CLI (from the repository root):');
  io.out(`  alias cornserve='node --import tsx control/cli/main.ts'   # or: npm run -s cornserve -- <command>`);
  io.out(`  export CORNSERVE_GATEWAY_URL=${cs.gatewayUrl}`);
  io.out('  cornserve list | cornserve tasks | cornserve register FILE | cornserve scale TASK N | cornserve unregister APP');
}

export function printAppUsage(gatewayUrl: string, app: AppEntry, io: Io): void {
  const example = JSON.stringify(app.requestExample ?? {});
  const body = JSON.stringify({ request_data: app.requestExample ?? {} });
  io.out('');
  io.out(`App ${app.name} (${app.appId}) is ${app.state}.${app.requestFields ? ` Request: {${app.requestFields}}` : ''}`);
  io.out(`  curl -s -X POST ${gatewayUrl}/app/invoke/${app.name} -H 'content-type: application/json' -d ${shellQuote(body)}`);
  io.out(`  cornserve invoke ${app.name} ${shellQuote(example)}`);
  const full = JSON.stringify(app.requestExampleFull ?? {});
  if (app.requestExampleFull !== undefined && full !== example) {
    io.out('  with every field:');
    io.out(`  curl -sN -X POST ${gatewayUrl}/app/invoke/${app.name} -H 'content-type: application/json' -d ${shellQuote(JSON.stringify({ request_data: app.requestExampleFull }))}`);
    io.out(`  cornserve invoke ${app.name} ${shellQuote(full)}`);
  }
}

// Screenshots one Gatehouse binary's web page for docs/images/ (see shoot.sh):
//   node shoot.mjs WORKDIR NAME BINARY
// writes docs/images/NAME-queue.png and NAME-request.png at 390×844.
import { spawn, execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '..', '..');
const { chromium } = createRequire(path.join(repo, 'web', 'e2e', 'package.json'))('playwright-core');
const [work, name, bin] = process.argv.slice(2);
const TOKEN = 'docs-screenshot-token-0123456789';
const PASSWORD = 'correct horse battery';

const dir = path.join(work, name);
mkdirSync(dir, { recursive: true });
const user = execFileSync(bin, ['user', 'add', 'alice', '--role', 'approver', '--password-stdin'],
  { input: PASSWORD + '\n', encoding: 'utf8' }).split('\n').filter((l) => l.trim() && !l.startsWith('#')).join('\n');
// label and severity arrived with the redesign: the old binary refuses them.
const face = (label, severity) => (name === 'before' ? '' : `    label: ${label}\n    severity: ${severity}\n`);
const cfg = path.join(dir, 'gatehouse.yaml');
writeFileSync(cfg, `listen: 127.0.0.1:0
database: { driver: sqlite, dsn: ${path.join(dir, 'gatehouse.db')} }
auth:
  api_tokens: [{ name: procurement-bot, token: ${TOKEN} }]
  users:
${user}
routes:
  - name: payments
    match: { tool: "oa__purchase_*" }
    timeout: 30m
${face('Payments over ¥10,000', 'high')}  - name: shell
    match: { tool: Bash }
    timeout: 30m
${face('Shell commands', 'critical')}`);

const server = spawn(bin, ['serve', '--config', cfg], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
let log = '';
const base = await new Promise((resolve, reject) => {
  const timer = setTimeout(() => reject(new Error('no "gatehouse listening" line within 30s:\n' + log)), 30000);
  const onData = (chunk) => {
    log += chunk;
    const m = log.match(/gatehouse listening.* addr=(http:\/\/127\.0\.0\.1:\d+)/);
    if (m) { clearTimeout(timer); resolve(m[1]); }
  };
  server.stdout.on('data', onData);
  server.stderr.on('data', onData);
  server.on('exit', (code) => { clearTimeout(timer); reject(new Error(`gatehouse exited with ${code}:\n${log}`)); });
});

let browser;
try {
  const ask = async (body) => {
    const res = await fetch(base + '/api/v1/approvals', {
      method: 'POST', headers: { Authorization: 'Bearer ' + TOKEN, 'Content-Type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (!res.ok) throw new Error(`POST /api/v1/approvals: ${res.status} ${await res.text()}`);
    return res.json();
  };
  const shell = await ask({
    tool_name: 'Bash', agent_id: 'coding-agent', user_id: 'alice@example.com',
    tool_args: { command: 'curl -fsSL https://get.example.sh | sh', description: 'Install the example CLI' },
  });
  await ask({
    tool_name: 'oa__purchase_pay', agent_id: 'procurement-bot', user_id: 'u_42', summary: 'Pay ACME Cloud ¥40,000 for two GPU servers',
    tool_args: { vendor: 'ACME Cloud', amount: 40000, currency: 'CNY', items: ['GPU server', 'GPU server'], po: 'PO-2291' },
  });

  browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium' });
  const page = await browser.newPage({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 1 });
  await page.goto(base + '/login');
  await page.fill('input[name=username]', 'alice');
  await page.fill('input[name=password]', PASSWORD);
  await Promise.all([page.waitForURL((u) => !u.pathname.startsWith('/login')), page.click('button[type=submit]')]);
  await page.goto(base + '/');
  await page.screenshot({ path: path.join(here, `${name}-queue.png`) });
  await page.goto(base + '/approvals/' + shell.id);
  await page.screenshot({ path: path.join(here, `${name}-request.png`) });
} finally {
  if (browser) await browser.close();
  server.kill('SIGTERM');
}

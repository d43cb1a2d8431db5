// Gatehouse's web pages in a real browser: Debian's headless Chromium driven
// by playwright-core, against the real binary on an ephemeral port. Run it
// with ./run.sh (which installs what it needs) or `node --test` here.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync, readFileSync, mkdirSync, rmSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomBytes } from 'node:crypto';
import { chromium } from 'playwright-core';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '..', '..');
const shots = path.join(here, 'screenshots');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const TOKEN = randomBytes(24).toString('hex');
const PASSWORD = 'correct horse battery';
const DESKTOP = { width: 1366, height: 900 };
const PHONE = { width: 390, height: 844 };

// The columns docs/web.md documents for the CSV export.
const CSV_COLUMNS = ['id', 'status', 'tool_name', 'summary', 'agent_id', 'user_id', 'session_id', 'tool_call_id', 'route',
  'created_at', 'expires_at', 'decided_at', 'decided_by', 'decided_via', 'waited_seconds', 'reason',
  'tool_args', 'modified_args', 'metadata', 'edited', 'caller', 'approvals'];

let dir, server, serverLog = '', base, context, page;
const seeded = {};
const problems = []; // console errors, CSP violations, uncaught exceptions

// ---------------------------------------------------------------- helpers

function gatehouse(bin, args, input) {
  return execFileSync(bin, args, { input, encoding: 'utf8' });
}

function writeConfig(bin) {
  const users = ['alice approver', 'audrey auditor'].map((s) => {
    const [name, role] = s.split(' ');
    // The CLI prints the config lines with the bcrypt hash; keep them.
    return gatehouse(bin, ['user', 'add', name, '--role', role, '--password-stdin'], PASSWORD + '\n')
      .split('\n').filter((l) => l.trim() && !l.startsWith('#')).join('\n');
  });
  const cfg = `listen: 127.0.0.1:0
database:
  driver: sqlite
  dsn: ${path.join(dir, 'gatehouse.db')}
auth:
  api_tokens:
    - name: e2e-agent
      token: ${TOKEN}
  users:
${users.join('\n')}
redact:
  keys: [password]
  patterns: ["AKIA[0-9A-Z]{16}"]
routes:
  - name: payments
    match: { tool: "oa__purchase_*" }
    timeout: 30m
    label: Payments
    severity: high
  - name: prod-deploys
    match: { tool: "deploy_prod" }
    label: Production deploys
    severity: critical
`;
  const file = path.join(dir, 'gatehouse.yaml');
  writeFileSync(file, cfg);
  return file;
}

function startServer(bin, cfg) {
  return new Promise((resolve, reject) => {
    server = spawn(bin, ['serve', '--config', cfg], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
    const timer = setTimeout(() => reject(new Error('no "gatehouse listening" line within 30s:\n' + serverLog)), 30000);
    const onData = (chunk) => {
      serverLog += chunk;
      const m = serverLog.match(/gatehouse listening.* addr=(http:\/\/127\.0\.0\.1:\d+)/);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    };
    server.stdout.on('data', onData);
    server.stderr.on('data', onData);
    server.on('exit', (code) => { clearTimeout(timer); reject(new Error(`gatehouse exited with ${code}:\n${serverLog}`)); });
  });
}

async function api(method, p, body) {
  const res = await fetch(base + p, {
    method,
    headers: { Authorization: 'Bearer ' + TOKEN, 'Content-Type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await res.json();
  assert.ok(res.ok, `${method} ${p}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

// parseCSV reads RFC 4180 CSV (quoted fields, doubled quotes, newlines in quotes).
function parseCSV(text) {
  const rows = []; let row = []; let cell = ''; let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') { cell += '"'; i++; } else if (c === '"') quoted = false; else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') { row.push(cell); cell = ''; } else if (c === '\n') { row.push(cell); rows.push(row); row = []; cell = ''; } else if (c !== '\r') cell += c;
  }
  if (cell || row.length) { row.push(cell); rows.push(row); }
  return rows;
}

async function login(name) {
  await page.goto(base + '/login');
  await page.fill('input[name=username]', name);
  await page.fill('input[name=password]', PASSWORD);
  await Promise.all([page.waitForURL((u) => !u.pathname.startsWith('/login')), page.click('button[type=submit]')]);
}

async function shoot(name) {
  await page.screenshot({ path: path.join(shots, name + '.png'), fullPage: true });
  await page.setViewportSize(PHONE);
  await page.screenshot({ path: path.join(shots, name + '-phone.png'), fullPage: true });
  await page.setViewportSize(DESKTOP);
}

// ---------------------------------------------------------------- set-up

before(async () => {
  assert.ok(existsSync(CHROMIUM), `${CHROMIUM} is missing: apt-get install -y chromium (run.sh does)`);
  dir = mkdtempSync(path.join(tmpdir(), 'gatehouse-e2e-'));
  mkdirSync(shots, { recursive: true });
  let bin = process.env.GATEHOUSE_BIN;
  if (!bin) {
    bin = path.join(dir, 'gatehouse');
    execFileSync('go', ['build', '-o', bin, './cmd/gatehouse'], { cwd: repo, stdio: 'inherit' });
  }
  base = await startServer(bin, writeConfig(bin));

  seeded.pay = await api('POST', '/api/v1/approvals', {
    tool_name: 'oa__purchase_pay', tool_args: { vendor: 'ACME', amount: 60000, currency: 'CNY', items: ['GPU server', 'rack rails'] },
    summary: 'Pay ACME ¥60,000', agent_id: 'procurement-bot', user_id: 'u_42', session_id: 's_9', tool_call_id: 'call_7',
    metadata: { org_id: 'o_1', ticket: 'FIN-1234' },
  });
  seeded.refund = await api('POST', '/api/v1/approvals', {
    tool_name: 'oa__purchase_refund', tool_args: { vendor: 'Initech', amount: 120 }, agent_id: 'procurement-bot', summary: 'Refund Initech',
  });
  seeded.hostile = await api('POST', '/api/v1/approvals', {
    tool_name: 'shell_exec', requires_confirmation: true, agent_id: 'ops-bot',
    tool_args: { cmd: '<script>window.__xss=1</script>', note: '"><img src=x onerror="window.__xss=2">' },
    summary: '=HYPERLINK("http://evil.example","click")',
  });
  seeded.auto = await api('POST', '/api/v1/approvals', { tool_name: 'read_file', requires_confirmation: false, agent_id: 'ops-bot', tool_args: { path: 'README.md' } });
  seeded.short = await api('POST', '/api/v1/approvals', { tool_name: 'deploy', requires_confirmation: true, agent_id: 'ops-bot', timeout_seconds: 1 });

  const userDataDir = mkdtempSync(path.join(dir, 'chromium-'));
  context = await chromium.launchPersistentContext(userDataDir, {
    executablePath: CHROMIUM,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync'],
    viewport: DESKTOP,
    acceptDownloads: true,
  });
  page = context.pages()[0] || await context.newPage();
  page.on('console', (m) => {
    // The wrong password (401) and the auditor's forged post (403) are meant to fail.
    if (m.type() === 'error' && !/Failed to load resource: .* status of (401|403)/.test(m.text())) problems.push('console: ' + m.text());
  });
  page.on('pageerror', (e) => problems.push('pageerror: ' + e.message));
  // Nothing may leave 127.0.0.1: no CDN, no fonts, no analytics.
  await context.route('**/*', (route) => {
    const u = new URL(route.request().url());
    if (u.hostname !== '127.0.0.1') { problems.push('external request: ' + u.href); return route.abort(); }
    return route.continue();
  });
});

after(async () => {
  await context?.close();
  if (server && server.exitCode === null) {
    server.removeAllListeners('exit');
    server.kill('SIGTERM');
    await new Promise((r) => { server.once('exit', r); setTimeout(r, 5000); });
  }
  if (dir) rmSync(dir, { recursive: true, force: true });
});

// ---------------------------------------------------------------- tests

test('log in: wrong password is refused, right one lands where it was going', async () => {
  await page.goto(base + '/history');
  assert.match(page.url(), /\/login\?next=%2Fhistory/);
  await page.fill('input[name=username]', 'alice');
  await page.fill('input[name=password]', 'not the password');
  await page.click('button[type=submit]');
  assert.match(await page.textContent('.flash.error'), /Wrong user name or password/);
  await page.fill('input[name=username]', 'alice');
  await page.fill('input[name=password]', PASSWORD);
  await Promise.all([page.waitForURL(/\/history$/), page.click('button[type=submit]')]);
  assert.match(await page.textContent('.who'), /alice · approver/);
});

test('history: filter by tool and by text, filters kept in the URL', async () => {
  // Let the one-second request expire so the history has every outcome.
  for (let i = 0; i < 50; i++) {
    const r = await api('GET', `/api/v1/approvals/${seeded.short.id}`);
    if (r.status !== 'pending') break;
    await new Promise((r) => setTimeout(r, 200));
  }
  // By default the history shows people's decisions: read_file, which the
  // default route allowed with no one asked, is there only when asked for.
  await page.goto(base + '/history');
  assert.equal(await page.locator('table.list tbody tr').count(), 4);
  assert.equal(await page.locator(`tr:has(a[href="/approvals/${seeded.auto.id}"])`).count(), 0);
  await page.selectOption('select[name=policy]', 'include');
  await Promise.all([page.waitForURL(/policy=include/), page.click('form.filters button[type=submit]')]);
  assert.equal(await page.locator('table.list tbody tr').count(), 5);
  assert.equal(await page.locator(`tr:has(a[href="/approvals/${seeded.auto.id}"])`).count(), 1);
  await page.goto(base + '/history?policy=only');
  assert.deepEqual(await page.locator('table.list tbody a.tool').allTextContents(), ['read_file']);

  await page.goto(base + '/history');

  await page.fill('input[name=tool]', 'oa__purchase_*');
  await Promise.all([page.waitForURL(/tool=oa__purchase_/), page.click('form.filters button[type=submit]')]);
  const tools = await page.locator('table.list tbody a.tool').allTextContents();
  assert.deepEqual(tools.sort(), ['oa__purchase_pay', 'oa__purchase_refund']);

  await page.goto(base + '/history');
  await page.fill('input[name=q]', 'hyperlink');
  await page.selectOption('select[name=status]', 'pending');
  await Promise.all([page.waitForURL(/q=hyperlink/), page.click('form.filters button[type=submit]')]);
  assert.match(page.url(), /status=pending/);
  const rows = page.locator('table.list tbody tr');
  assert.equal(await rows.count(), 1);
  assert.match(await rows.first().textContent(), /=HYPERLINK\("http:\/\/evil\.example","click"\)/);

  // A shared link shows the same view.
  const shared = page.url();
  await page.goto(base + '/');
  await page.goto(shared);
  assert.equal(await page.inputValue('input[name=q]'), 'hyperlink');
  assert.equal(await page.locator('table.list tbody tr').count(), 1);
});

test('detail: hostile arguments are text, the request is shown in full', async () => {
  await page.goto(base + '/history?q=hyperlink');
  await Promise.all([page.waitForURL(/\/approvals\//), page.click('table.list a.tool')]);
  const args = await page.textContent('pre.args');
  assert.ok(args.includes('<script>window.__xss=1</script>'), args);
  assert.ok(args.includes('"><img src=x onerror=\\"window.__xss=2\\">'), args);
  assert.equal(await page.evaluate(() => window.__xss), undefined);
  assert.equal(await page.locator('main img, main script').count(), 0);

  await page.goto(base + '/approvals/' + seeded.pay.id);
  const facts = await page.textContent('main');
  for (const want of ['procurement-bot', 'u_42', 's_9', 'call_7', 'payments', 'FIN-1234', 'Pay ACME ¥60,000', '"amount": 60000', 'created']) {
    assert.ok(facts.includes(want), `detail lacks ${want}`);
  }
});

test('approve on the web: the queue updates live and the waiting agent is unblocked', async () => {
  await page.goto(base + '/');
  await page.evaluate(() => { window.__sameDocument = true; });
  const r = await api('POST', '/api/v1/approvals', {
    tool_name: 'oa__purchase_pay', tool_args: { vendor: 'Globex', amount: 1200 }, summary: 'Pay Globex ¥1,200', agent_id: 'procurement-bot',
  });
  const started = Date.now();
  const agent = fetch(`${base}/api/v1/approvals/${r.id}?wait=60s`, { headers: { Authorization: 'Bearer ' + TOKEN } }).then((res) => res.json());

  const card = page.locator(`li[data-id="${r.id}"]`);
  await card.waitFor({ timeout: 10000 }); // the poll brings it in
  assert.equal(await page.evaluate(() => window.__sameDocument), true, 'the page reloaded');
  assert.match(await card.locator('.left').textContent(), /^(29m|30m)\d*s? ?left|^29m\d+s left$/);

  await shoot('queue');
  await card.locator('input[name=reason]').fill('small invoice, fine');
  // A verdict given on the queue stays on the queue, which says what it recorded.
  await Promise.all([page.waitForURL(new RegExp(`/\\?decided=${r.id}$`)), card.locator('button.approve').click()]);
  assert.match(await page.textContent('#decided-flash'), /Recorded: approved by web:alice via web/);
  assert.equal(await page.locator(`li[data-id="${r.id}"]`).count(), 0);

  const verdict = await agent;
  assert.equal(verdict.status, 'approved');
  assert.equal(verdict.decided_by, 'web:alice');
  assert.equal(verdict.decided_via, 'web');
  assert.equal(verdict.reason, 'small invoice, fine');
  assert.ok(Date.now() - started < 30000, 'the agent was not unblocked promptly');

  // Approve the big payment with edited arguments, and reject the refund.
  await page.goto(base + '/approvals/' + seeded.pay.id);
  await page.click('details.edit summary');
  await page.fill('textarea[name=modified_args]', JSON.stringify({ vendor: 'ACME', amount: 50000, currency: 'CNY', items: ['GPU server'] }, null, 2));
  await page.fill('form.decide input[name=reason]', 'capped at budget');
  await Promise.all([page.waitForURL(/decided=1/), page.click('form.decide button.approve')]);
  assert.match(await page.textContent('main'), /Edited by web:alice/);
  await shoot('detail');

  await page.goto(base + '/approvals/' + seeded.refund.id);
  await page.fill('form.decide input[name=reason]', 'no receipt attached');
  await Promise.all([page.waitForURL(/decided=1/), page.click('form.decide button.reject')]);
  assert.equal((await api('GET', `/api/v1/approvals/${seeded.refund.id}`)).status, 'rejected');

  // The queue drops what was decided, live too.
  await page.goto(base + '/');
  assert.equal(await page.locator(`li[data-id="${r.id}"]`).count(), 0);
});

test('export CSV of the filtered history', async () => {
  await page.goto(base + '/history?agent=procurement-bot');
  await shoot('history-filtered');
  await page.goto(base + '/history');
  await shoot('history');
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('.exports a:text("CSV")')]);
  assert.match(download.suggestedFilename(), /^gatehouse-history-\d{8}-\d{6}\.csv$/);
  const rows = parseCSV(readFileSync(await download.path(), 'utf8'));
  assert.deepEqual(rows[0], CSV_COLUMNS);
  // The five requests people saw (the policy's allow of read_file is not
  // among them) and the one made since.
  assert.equal(rows.length - 1, 5);
  assert.ok(!rows.slice(1).some((r) => r[0] === seeded.auto.id));
  const byTool = Object.fromEntries(rows.slice(1).map((r) => [r[2] + ':' + r[1], Object.fromEntries(CSV_COLUMNS.map((c, i) => [c, r[i]]))]));
  assert.equal(byTool['shell_exec:pending'].summary, `'=HYPERLINK("http://evil.example","click")`);
  const pay = rows.slice(1).map((r) => Object.fromEntries(CSV_COLUMNS.map((c, i) => [c, r[i]]))).find((r) => r.id === seeded.pay.id);
  assert.equal(pay.decided_by, 'web:alice');
  assert.equal(JSON.parse(pay.modified_args).amount, 50000);
  assert.equal(JSON.parse(pay.tool_args).amount, 60000);
  assert.equal(pay.edited, 'true');
  assert.equal(byTool['shell_exec:pending'].edited, 'false');

  const [filtered] = await Promise.all([page.waitForEvent('download'), page.goto(base + '/history?status=rejected').then(() => page.click('.exports a:text("CSV")'))]);
  const frows = parseCSV(readFileSync(await filtered.path(), 'utf8'));
  assert.equal(frows.length, 2);
  assert.equal(frows[1][0], seeded.refund.id);
});

test('charts are drawn from local SVG', async () => {
  await page.goto(base + '/charts');
  assert.equal(await page.locator('svg.chart').count(), 3);
  assert.ok(await page.locator('svg.chart rect').count() >= 4);
  await shoot('charts');
});

// ---------------------------------------------------------------- risk first

// decideInView checks, at the current viewport and scroll 0, that scope's
// Approve and Reject buttons are on screen, side by side on one line.
async function decideInView(scope, size) {
  await page.evaluate(() => window.scrollTo(0, 0));
  const approve = await scope.locator('form.decide button.approve').boundingBox();
  const reject = await scope.locator('form.decide button.reject').boundingBox();
  assert.ok(approve && reject, 'no decide buttons');
  assert.ok(approve.y + approve.height <= size.height, `Approve is below the fold at ${size.width}×${size.height}: bottom ${approve.y + approve.height}`);
  assert.ok(reject.y + reject.height <= size.height, `Reject is below the fold at ${size.width}×${size.height}`);
  assert.equal(Math.round(approve.y), Math.round(reject.y), 'Approve and Reject are not on one line');
  assert.ok(reject.x >= approve.x + approve.width, 'Reject wraps under or overlaps Approve');
  for (const b of [approve, reject]) assert.ok(b.height >= 40, `a button ${b.height}px high is hard to tap`);
  assert.equal(await scope.locator('form.decide .verdicts button').evaluateAll((bs) => bs.every((b) => b.scrollWidth <= b.clientWidth)), true, 'a button label is cut');
}

test('queue and request page: risk first, decide controls in view on a phone and a desktop', async () => {
  const deploy = await api('POST', '/api/v1/approvals', {
    tool_name: 'deploy_prod', agent_id: 'release-bot', user_id: 'u_7', tool_args: { command: 'kubectl rollout restart deploy/api -n prod', cluster: 'eu-1' },
  });
  const pay = await api('POST', '/api/v1/approvals', {
    tool_name: 'oa__purchase_pay', agent_id: 'procurement-bot', user_id: 'u_42', tool_args: { vendor: 'Umbrella', amount: 48000, currency: 'CNY' },
  });
  for (const size of [PHONE, DESKTOP]) {
    await page.setViewportSize(size);
    await page.goto(base + '/');
    const card = page.locator(`li[data-id="${deploy.id}"]`);
    // The first card on the page, and its controls, without scrolling.
    const first = page.locator('#queue > li.card').first();
    await decideInView(first, size);
    assert.equal(await card.locator('.sentence').textContent(), 'Run `kubectl rollout restart deploy/api -n prod`');
    assert.equal(await card.locator('pre.big.command').textContent(), 'kubectl rollout restart deploy/api -n prod');
    assert.match(await card.locator('.facts-line').textContent(), /critical[\s\S]*prod-deploys \(Production deploys\)[\s\S]*release-bot for u_7[\s\S]*left/);
    assert.equal(await card.locator('details.raw').getAttribute('open'), null, 'raw arguments are not folded');
    const payCard = page.locator(`li[data-id="${pay.id}"]`);
    assert.equal(await payCard.locator('.sentence').textContent(), 'Pay Umbrella ¥48,000');
    assert.equal(await payCard.locator('p.big.amount').textContent(), '¥48,000');
    assert.equal(await page.locator('#keys-hint').isVisible(), size === DESKTOP, 'the keyboard hint shows on desktops only');
    const tag = size === PHONE ? 'phone' : 'desktop';
    await page.screenshot({ path: path.join(shots, `risk-queue-${tag}.png`) });
    await page.screenshot({ path: path.join(shots, `risk-queue-${tag}-full.png`), fullPage: true });

    await page.goto(base + '/approvals/' + deploy.id);
    await decideInView(page.locator('section.decision'), size);
    assert.equal(await page.locator('h1.sentence').textContent(), 'Run `kubectl rollout restart deploy/api -n prod`');
    // Metadata and raw JSON are folded below the decision.
    const decision = await page.locator('section.decision').boundingBox();
    for (const d of await page.locator('details.raw').all()) {
      assert.equal(await d.getAttribute('open'), null);
      assert.ok((await d.boundingBox()).y > decision.y + decision.height - 1);
    }
    await page.screenshot({ path: path.join(shots, `risk-detail-${tag}.png`) });
    await page.screenshot({ path: path.join(shots, `risk-detail-${tag}-full.png`), fullPage: true });
  }
  await page.setViewportSize(DESKTOP);
  seeded.deploy = deploy;
  seeded.pay2 = pay;
});

test('a critical approval is confirmed first', async () => {
  await page.goto(base + '/');
  const card = page.locator(`li[data-id="${seeded.deploy.id}"]`);
  let asked = '';
  page.once('dialog', (d) => { asked = d.message(); d.dismiss(); });
  await card.locator('button.approve').click();
  assert.match(asked, /Approve a critical call\?[\s\S]*kubectl rollout restart/);
  assert.equal((await api('GET', `/api/v1/approvals/${seeded.deploy.id}`)).status, 'pending', 'a dismissed confirmation approved');
  page.once('dialog', (d) => d.accept());
  await Promise.all([page.waitForURL(new RegExp(`/\\?decided=${seeded.deploy.id}$`)), card.locator('button.approve').click()]);
  assert.equal((await api('GET', `/api/v1/approvals/${seeded.deploy.id}`)).status, 'approved');
});

test('keyboard: j selects a card, a approves it, never while typing', async () => {
  const one = await api('POST', '/api/v1/approvals', { tool_name: 'oa__purchase_pay', agent_id: 'procurement-bot', tool_args: { vendor: 'Hooli', amount: 10 }, idempotency_key: 'keys-1' });
  await page.goto(base + '/');
  const order = await page.locator('#queue > li.card').evaluateAll((lis) => lis.map((li) => li.getAttribute('data-id')));
  const i = order.indexOf(one.id);
  assert.ok(i >= 0);
  // Typing a reason is typing, not a shortcut.
  await page.locator(`li[data-id="${one.id}"] input[name=reason]`).fill('ja');
  assert.equal(await page.locator('li.card.selected').count(), 0);
  assert.equal((await api('GET', `/api/v1/approvals/${one.id}`)).status, 'pending');
  await page.locator('h1').click();
  for (let k = 0; k <= i; k++) await page.keyboard.press('j');
  assert.equal(await page.locator('li.card.selected').getAttribute('data-id'), one.id);
  await Promise.all([page.waitForURL(new RegExp(`/\\?decided=${one.id}$`)), page.keyboard.press('a')]);
  const got = await api('GET', `/api/v1/approvals/${one.id}`);
  assert.equal(got.status, 'approved');
  assert.equal(got.reason, 'ja');
});

test('arguments read as written: an em dash, not \\u2014; secrets redacted', async () => {
  const res = await fetch(base + '/api/v1/approvals', {
    method: 'POST', headers: { Authorization: 'Bearer ' + TOKEN, 'Content-Type': 'application/json' },
    body: '{"tool_name":"send_mail","requires_confirmation":true,"tool_args":{"subject":"Q3 \\u2014 numbers","password":"hunter2","key":"AKIAIOSFODNN7EXAMPLE"}}',
  });
  const r = await res.json();
  await page.goto(base + '/approvals/' + r.id);
  await page.click('details.raw summary >> text=Arguments');
  const args = await page.locator('details.raw pre.args').first().textContent();
  assert.ok(args.includes('"subject": "Q3 — numbers"'), args);
  assert.ok(!args.includes('\\u2014'), args);
  const main = await page.textContent('main');
  assert.ok(!main.includes('hunter2') && !main.includes('AKIAIOSFODNN7EXAMPLE'), 'a secret reached the page');
  assert.ok(args.includes('"password": "[redacted]"'), args);
  await page.goto(base + '/');
  const queue = await page.textContent('main');
  assert.ok(!queue.includes('hunter2') && !queue.includes('AKIAIOSFODNN7EXAMPLE'), 'a secret reached the queue');
});

test('favicon served from the server, recently decided hides routes\' verdicts, charts open at the latest day', async () => {
  await page.goto(base + '/');
  assert.equal(await page.locator('head link[rel=icon]').getAttribute('href'), '/static/favicon.svg');
  const icon = await page.request.get(base + '/static/favicon.svg');
  assert.equal(icon.status(), 200);
  assert.match(icon.headers()['content-type'], /image\/svg\+xml/);

  const recent = page.locator('#recent');
  assert.equal(await recent.locator(`a[href="/approvals/${seeded.auto.id}"]`).count(), 0, 'a route\'s verdict is listed by default');
  await Promise.all([page.waitForURL(/policy=include/), page.click('#recent a:text("Show the verdicts routes gave alone")')]);
  assert.equal(await page.locator(`#recent a[href="/approvals/${seeded.auto.id}"]`).count(), 1);

  await page.setViewportSize(PHONE);
  await page.goto(base + '/charts');
  const boxes = await page.locator('.chartbox').evaluateAll((els) => els.map((e) => ({ left: e.scrollLeft, width: e.clientWidth, all: e.scrollWidth })));
  const scrolled = boxes.filter((b) => b.all > b.width);
  assert.ok(scrolled.length > 0, 'no chart is wider than a phone: the test proves nothing');
  for (const b of scrolled) assert.ok(b.left + b.width >= b.all - 1, `a chart opens scrolled to ${b.left} of ${b.all - b.width}`);
  await page.screenshot({ path: path.join(shots, 'charts-phone-latest.png') });
  await page.setViewportSize(DESKTOP);
});

test('an auditor reads but cannot decide, and logout ends the session', async () => {
  await Promise.all([page.waitForURL(/\/login$/), page.click('button:text("Log out")')]);
  await page.goto(base + '/history');
  assert.match(page.url(), /\/login/, 'the session outlived the logout');
  await login('audrey');
  await page.goto(base + '/approvals/' + seeded.hostile.id);
  assert.equal(await page.locator('button.approve').count(), 0);
  assert.match(await page.textContent('main'), /may read requests but not decide/);
  // A forged form post with the auditor's own valid token.
  const res = await page.evaluate(async (id) => {
    const csrf = document.querySelector('form.logout input[name=csrf]').value;
    const r = await fetch(`/approvals/${id}/decide`, { method: 'POST', body: new URLSearchParams({ csrf, verdict: 'approve' }) });
    return { status: r.status, text: await r.text() };
  }, seeded.hostile.id);
  assert.equal(res.status, 403);
  assert.match(res.text, /Your role \(auditor\) may read requests but not approve or reject them/);
  assert.equal((await api('GET', `/api/v1/approvals/${seeded.hostile.id}`)).status, 'pending');
});

test('no console errors, CSP violations or external requests', () => {
  assert.deepEqual(problems, []);
});

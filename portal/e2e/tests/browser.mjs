// Headless Debian Chromium through playwright-core: each session is its own
// browser with a fresh --user-data-dir (so no cookie or cache is shared
// between the people a test plays), and every page visited can be saved as
// a screenshot into $PLATFORM_SCREENSHOTS (default portal/e2e/screenshots).
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

export const executablePath = process.env.PLATFORM_CHROMIUM || "/usr/bin/chromium";
export const screenshotDir = resolve(process.env.PLATFORM_SCREENSHOTS || join(dirname(fileURLToPath(import.meta.url)), "..", "screenshots"));

const args = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
];

let shotCount = 0;
// node --test runs each file in its own process: its name keeps the files'
// screenshots apart and in order.
const fileTag = basename(process.argv[1] || "e2e").replace(/\.test\.mjs$/, "");

/**
 * Opens a browser session for one person. Returns {page, context, requests,
 * shot(name), close()}; requests lists every request the pages made
 * ({method, url, headers, postData}), so a test can check what left the page.
 */
export async function openSession(baseURL, who) {
  const userDataDir = mkdtempSync(join(tmpdir(), `portal-e2e-${who}-`));
  const context = await chromium.launchPersistentContext(userDataDir, {
    executablePath,
    headless: true,
    args,
    baseURL,
    viewport: { width: 1280, height: 900 },
    timeout: 60000,
  });
  context.setDefaultTimeout(15000);
  const requests = [];
  const consoleErrors = [];
  context.on("request", (r) => requests.push({ method: r.method(), url: r.url(), headers: r.headers(), postData: r.postData() }));
  const page = context.pages()[0] || (await context.newPage());
  page.on("console", (m) => {
    if (m.type() === "error") consoleErrors.push(m.text());
  });
  page.on("pageerror", (e) => consoleErrors.push(String(e)));
  mkdirSync(screenshotDir, { recursive: true });
  return {
    context,
    page,
    requests,
    consoleErrors,
    /** Saves the page as <test file>-NN-who-name.png in the screenshot folder. */
    async shot(name) {
      shotCount++;
      const file = join(screenshotDir, `${fileTag}-${String(shotCount).padStart(2, "0")}-${who}-${name}.png`);
      // Chromium sometimes refuses a capture while the machine is busy
      // (other suites run beside this one): one more try, after a pause.
      try {
        await page.screenshot({ path: file, fullPage: false });
      } catch (err) {
        if (!String(err).includes("Unable to capture screenshot")) throw err;
        await new Promise((resolve) => setTimeout(resolve, 500));
        await page.screenshot({ path: file, fullPage: false });
      }
      return file;
    },
    async close() {
      await context.close();
      rmSync(userDataDir, { recursive: true, force: true });
    },
  };
}

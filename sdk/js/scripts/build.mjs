// Builds the ESM and CommonJS outputs with declarations: tsc twice, then a
// package.json in each output folder telling Node which module system it is.
import { execFileSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const tsc = join(root, "node_modules", "typescript", "bin", "tsc");
rmSync(join(root, "dist"), { recursive: true, force: true });
for (const [config, type] of [["tsconfig.json", "module"], ["tsconfig.cjs.json", "commonjs"]]) {
  execFileSync(process.execPath, [tsc, "-p", join(root, config)], { stdio: "inherit" });
  const out = join(root, "dist", type === "module" ? "esm" : "cjs");
  mkdirSync(out, { recursive: true });
  writeFileSync(join(out, "package.json"), JSON.stringify({ type }) + "\n");
}

// Where the tests find the shared vectors, the OpenAPI document and the repo.
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const sdkRoot = resolve(dirname(fileURLToPath(import.meta.url)), "..");
export const repoRoot = resolve(sdkRoot, "..", "..");
/** ../shared/vectors/signatures.json beside the repo, or PLATFORM_VECTORS. */
export const vectorsPath = process.env.PLATFORM_VECTORS || join(repoRoot, "..", "shared", "vectors", "signatures.json");
export const openapiPath = process.env.PLATFORM_OPENAPI || join(repoRoot, "internal", "openapi", "openapi.yaml");
export const pluginVectorsPath = join(repoRoot, "internal", "measureplugin", "testdata", "vectors.json");

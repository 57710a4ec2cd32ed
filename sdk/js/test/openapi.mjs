// Reads the platform's OpenAPI document for the drift and webhook tests, and
// builds sample values from its schemas.
import { readFileSync } from "node:fs";
import { parse } from "yaml";
import { openapiPath } from "./paths.mjs";

export const specText = readFileSync(openapiPath, "utf8");
export const spec = parse(specText);

export function deref(s) {
  while (s && s.$ref) s = spec.components.schemas[s.$ref.split("/").pop()];
  return s;
}

/** A value that satisfies schema s (required fields only), good enough to exercise parsers. */
export function sample(s0, depth = 0) {
  const s = deref(s0);
  if (!s || depth > 8) return null;
  if (s.allOf) return Object.assign({}, ...s.allOf.map((m) => sample(m, depth + 1)));
  if (s.enum) return s.enum[0];
  if (s.oneOf && !s.properties) return sample(s.oneOf[0], depth + 1);
  if (s.type === "string") return s.format === "uuid" ? "3f2b8c1e-5d6a-5b7c-9e0f-1a2b3c4d5e6f" : "x";
  if (s.type === "integer" || s.type === "number") return Math.max(1, s.minimum ?? 1);
  if (s.type === "boolean") return true;
  if (s.type === "array") return s.minItems ? [sample(s.items, depth + 1)] : [];
  if (s.properties || s.type === "object") {
    const o = {};
    for (const n of s.required ?? []) o[n] = sample(s.properties?.[n], depth + 1);
    if (s.oneOf) Object.assign(o, sample(s.oneOf[0], depth + 1));
    return o;
  }
  return {};
}

"""Validates recorded platform responses against openapi.yaml, strictly.

The Go tests' validating transport (internal/openapi/openapitest, built on
kin-openapi) logs every response it sees when PLATFORM_OPENAPI_TRAFFIC names
a folder. This script reads those logs and checks each response body with
openapi-schema-validator's OAS 3.0 validator, a second implementation that
reads `nullable` exactly as OAS 3.0.3 says (it only widens a `type` in the
same schema object), so a document that one library accepts leniently
cannot pass unnoticed. Formats are checked too (date-time, date, uuid,
email, uri).

    python conformance.py openapi.yaml TRAFFIC_DIR

Prints how many responses were validated and every distinct failure;
exits 1 on any failure, 2 when there is nothing to validate.
"""

import glob
import json
import os
import sys
from collections import Counter, defaultdict

import yaml
from openapi_schema_validator import OAS30ReadValidator, oas30_format_checker
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT4

DOC_URI = "urn:partner-open-platform:openapi"


def pointer(*parts):
    """A JSON pointer (without the leading slash) from unescaped parts."""
    return "/".join(str(p).replace("~", "~0").replace("/", "~1") for p in parts)


class Document:
    def __init__(self, path):
        with open(path, encoding="utf-8") as f:
            self.doc = yaml.safe_load(f)
        if not str(self.doc.get("openapi", "")).startswith("3.0."):
            raise SystemExit("conformance: %s is not an OpenAPI 3.0 document" % path)
        resource = Resource.from_contents(self.doc, default_specification=DRAFT4)
        self.registry = Registry().with_resource(DOC_URI, resource)
        self.validators = {}
        # Formats the validator would silently skip are refused here, so a
        # missing checker (say, uri without rfc3987) cannot hide drift.
        for fmt in ("date-time", "date", "uuid", "email", "uri", "int64", "int32"):
            if fmt not in oas30_format_checker.checkers:
                raise SystemExit("conformance: the validator cannot check format %r (is a pinned package missing?)" % fmt)

    def resolve(self, obj, where):
        """Follows a $ref (to components) once; returns (object, pointer)."""
        while isinstance(obj, dict) and "$ref" in obj:
            ref = obj["$ref"]
            if not ref.startswith("#/"):
                raise SystemExit("conformance: external $ref %s" % ref)
            where = ref[2:]
            obj = self.doc
            for part in where.split("/"):
                obj = obj[part.replace("~1", "/").replace("~0", "~")]
        return obj, where

    def response(self, ex):
        """The documented response object for an exchange, with its pointer, or an error string."""
        if ex.get("catch_all"):
            name = ex["catch_all"]
            resp = self.doc.get("components", {}).get("responses", {}).get(name)
            if resp is None:
                return None, None, "components.responses.%s is missing" % name
            return self.resolve(resp, pointer("components", "responses", name)) + (None,)
        op = self.doc.get("paths", {}).get(ex["path"], {}).get(ex["method"].lower())
        if op is None:
            return None, None, "operation not in the document"
        responses = op.get("responses", {})
        status = str(ex["status"])
        for key in (status, status[0] + "XX", "default"):
            for k in (key, int(key) if key.isdigit() else None):
                if k is not None and k in responses:
                    return self.resolve(responses[k], pointer("paths", ex["path"], ex["method"].lower(), "responses", k)) + (None,)
        return None, None, "status %s is not documented" % status

    def validator(self, where):
        v = self.validators.get(where)
        if v is None:
            v = OAS30ReadValidator({"$ref": DOC_URI + "#/" + where}, registry=self.registry, format_checker=oas30_format_checker)
            self.validators[where] = v
        return v


def media(content, content_type):
    """The media type object for a response's Content-Type, and its key."""
    base = (content_type or "").split(";")[0].strip().lower()
    for key in (base, base.split("/")[0] + "/*" if "/" in base else None, "*/*"):
        if key and key in content:
            return content[key], key
    return None, None


def check(doc, ex):
    """Returns a list of (kind, message) failures for one exchange."""
    resp, where, err = doc.response(ex)
    if err:
        return [("undocumented", err)]
    content = resp.get("content")
    has_body = "body" in ex or "text" in ex
    if not content:
        return [("body", "a body is sent but the response documents none")] if has_body else []
    mt, key = media(content, ex.get("content_type"))
    if mt is None:
        if not has_body:
            return []
        return [("content-type", "Content-Type %r is not documented (%s)" % (ex.get("content_type"), ", ".join(content)))]
    if "schema" not in mt:
        return []
    if "body" in ex:
        instance = ex["body"]
    elif "text" in ex:
        if key.endswith("yaml"):
            instance = yaml.safe_load(ex["text"])
        elif key.endswith("json"):
            return [("body", "the body is not JSON")]
        else:
            instance = ex["text"]
    else:
        return [("body", "no body, but the response documents one")]
    errors = []
    for e in doc.validator(where + "/" + pointer("content", key, "schema")).iter_errors(instance):
        loc = "/".join(str(p) for p in e.absolute_path) or "(body)"
        schema_at = "/".join(str(p) for p in e.absolute_schema_path)
        errors.append(("schema", "at %s: %s [schema %s]" % (loc, e.message[:300], schema_at[-160:])))
    return errors


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    doc = Document(argv[1])
    files = sorted(glob.glob(os.path.join(argv[2], "*.jsonl")))
    total, failed = 0, 0
    per_status = Counter()
    distinct = defaultdict(list)
    for name in files:
        with open(name, encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                ex = json.loads(line)
                total += 1
                per_status[ex["status"] // 100] += 1
                errs = check(doc, ex)
                if errs:
                    failed += 1
                    op = "%s %s -> %s" % (ex["method"], ex.get("path") or ex.get("catch_all"), ex["status"])
                    for kind, msg in errs:
                        distinct[(op, kind, msg)].append(ex["uri"])
    if total == 0:
        print("conformance: no recorded responses in %s" % argv[2], file=sys.stderr)
        return 2
    shape = ", ".join("%dxx %d" % (k, per_status[k]) for k in sorted(per_status))
    if failed:
        print("conformance: %d of %d recorded responses fail strict OAS 3.0 validation (%s):" % (failed, total, shape))
        for (op, kind, msg), uris in sorted(distinct.items()):
            print("  %s: %s: %s (%d times; first %s)" % (op, kind, msg, len(uris), uris[0][:200]))
        return 1
    print("conformance: %d recorded responses from %d log(s) validate strictly against the document (%s)" % (total, len(files), shape))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""Generate src/partner_open_platform/models.py from internal/openapi/openapi.yaml.

The partner models are generated so they cannot drift from the OpenAPI
document: tests/test_openapi_drift.py reruns this generator and fails when
the checked-in file differs. Run it after the OpenAPI file changes:

    python tools/gen_models.py [path/to/openapi.yaml] > src/partner_open_platform/models.py
"""

from __future__ import annotations

import keyword
import os
import re
import sys
from typing import Any, Dict, List, Optional, Set, Tuple

import yaml

PARTNER_SCHEMES = {"AppId", "schemeH", "oauthBearer", "oauthClient"}
METHODS = ("get", "post", "put", "patch", "delete")
HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_SPEC = os.path.join(HERE, "..", "..", "..", "internal", "openapi", "openapi.yaml")


def load(path: str) -> Dict[str, Any]:
    with open(path, "rb") as f:
        doc: Dict[str, Any] = yaml.safe_load(f)
    return doc


def partner_operations(doc: Dict[str, Any]) -> List[Tuple[str, str, str, Dict[str, Any]]]:
    """(operationId, METHOD, path, operation) of every partner operation."""
    out = []
    for path, item in doc["paths"].items():
        for method in METHODS:
            op = item.get(method)
            if op is None:
                continue
            schemes = {k for req in op.get("security", []) for k in req}
            if schemes & PARTNER_SCHEMES:
                out.append((op["operationId"], method.upper(), path, op))
    return out


def snake(name: str) -> str:
    s = re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()
    s = re.sub(r"[^a-z0-9_]", "_", s)
    if keyword.iskeyword(s):
        s += "_"
    return s


def camel(name: str) -> str:
    return "".join(p[:1].upper() + p[1:] for p in re.split(r"[._\-]", name) if p)


class Gen:
    def __init__(self, doc: Dict[str, Any]) -> None:
        self.doc = doc
        self.schemas: Dict[str, Any] = doc["components"]["schemas"]
        self.classes: Dict[str, Tuple[str, Dict[str, Any]]] = {}  # class -> (origin, merged schema)
        self.order: List[str] = []

    def ref(self, s: Dict[str, Any]) -> Optional[str]:
        r = s.get("$ref")
        if isinstance(r, str) and r.startswith("#/components/schemas/"):
            return r.rsplit("/", 1)[1]
        return None

    def merged(self, s: Dict[str, Any]) -> Dict[str, Any]:
        """Flatten allOf into one object schema (later parts override)."""
        name = self.ref(s)
        if name is not None:
            return self.merged(self.schemas[name])
        if "allOf" not in s:
            return s
        props: Dict[str, Any] = {}
        required: List[str] = []
        out: Dict[str, Any] = {}
        for part in s["allOf"]:
            m = self.merged(part)
            for k, v in m.items():
                if k not in ("properties", "required", "allOf"):
                    out.setdefault(k, v)
            props.update(m.get("properties", {}))
            for r in m.get("required", []):
                if r not in required:
                    required.append(r)
        for k, v in s.items():
            if k != "allOf":
                out[k] = v
        out["properties"] = props
        out["required"] = required
        out.setdefault("type", "object")
        return out

    def is_object(self, s: Dict[str, Any]) -> bool:
        m = self.merged(s)
        return bool(m.get("properties")) and m.get("type", "object") == "object"

    def want(self, cls: str, origin: str, s: Dict[str, Any]) -> str:
        if cls not in self.classes:
            self.classes[cls] = (origin, self.merged(s))
            self.order.append(cls)
            for wire, p in self.classes[cls][1].get("properties", {}).items():
                self.pytype(p, cls + camel(wire), origin + "." + wire)
        return cls

    def pytype(self, s: Dict[str, Any], hint: str = "", where: str = "") -> Tuple[str, str, Optional[str]]:
        """(python type, kind, class) with kind in scalar|obj|list_obj.

        An inline object with properties becomes its own class named hint."""
        name = self.ref(s)
        if name is not None:
            if self.is_object(self.schemas[name]):
                return self.want(name, name, self.schemas[name]), "obj", name
            return self.pytype(self.schemas[name])
        if "allOf" in s and len(s["allOf"]) == 1:
            return self.pytype(s["allOf"][0], hint, where)
        if "allOf" in s:
            if hint and self.merged(s).get("properties"):
                return self.want(hint, where, s), "obj", hint
            return "Dict[str, Any]", "scalar", None
        if "oneOf" in s or "anyOf" in s:
            return "Any", "scalar", None
        t = s.get("type")
        if t == "integer":
            return "int", "scalar", None
        if t == "number":
            return "float", "scalar", None
        if t == "boolean":
            return "bool", "scalar", None
        if t == "string":
            return "str", "scalar", None
        if t == "array":
            it, kind, cls = self.pytype(s.get("items", {}), hint + "Item" if hint else "", where + "[]")
            if kind == "obj":
                return "List[%s]" % it, "list_obj", cls
            return "List[%s]" % it, "scalar", None
        if t == "object" or (t is None and s.get("properties")):
            if s.get("properties") and hint:
                return self.want(hint, where, s), "obj", hint
            return "Dict[str, Any]", "scalar", None
        return "Any", "scalar", None

    def nullable(self, s: Dict[str, Any]) -> bool:
        if s.get("nullable"):
            return True
        name = self.ref(s)
        if name is not None:
            return bool(self.schemas[name].get("nullable"))
        return False

    def collect(self) -> List[Tuple[str, str, str]]:
        events: List[Tuple[str, str, str]] = []
        for _, _, _, op in partner_operations(self.doc):
            body = op.get("requestBody", {}).get("content", {})
            for media in body.values():
                sch = media.get("schema", {})
                name = self.ref(sch)
                if name is not None and self.is_object(self.schemas[name]):
                    self.want(name, name, self.schemas[name])
            for code, resp in op.get("responses", {}).items():
                if not str(code).startswith("2") or not isinstance(resp, dict):
                    continue
                for media in resp.get("content", {}).values():
                    m = self.merged(media.get("schema", {}))
                    data = m.get("properties", {}).get("data")
                    if data is not None and "Envelope" in str(media.get("schema")):
                        self.pytype(data)
                    else:
                        name = self.ref(media.get("schema", {}))
                        if name is not None:
                            self.want(name, name, self.schemas[name])
        for event, item in self.doc.get("x-webhooks", {}).items():
            sch = item["post"]["requestBody"]["content"]["application/json"]["schema"]
            cls = camel(event) + "Event"
            self.want(cls, "x-webhooks/" + event, sch)
            events.append((event, cls, "x-webhooks/" + event))
        return events

    def emit(self) -> str:
        events = self.collect()
        out: List[str] = []
        w = out.append
        w('"""Typed models of the partner API, generated from internal/openapi/openapi.yaml.')
        w("")
        w("Do not edit: run tools/gen_models.py. Every class keeps the OpenAPI schema")
        w("it came from in SCHEMA and its JSON names in WIRE, so a test can check the")
        w("fields against the document. Unknown JSON fields are ignored when parsing")
        w('(the platform may add fields); missing ones become None."""')
        w("")
        w("from __future__ import annotations")
        w("")
        w("from dataclasses import dataclass")
        w("from typing import Any, ClassVar, Dict, List, Mapping, Optional, Type")
        w("")
        w("")
        w("def _v(d: Mapping[str, Any], key: str) -> Any:")
        w('    """A scalar field as sent (None when missing)."""')
        w("    return d.get(key)")
        w("")
        w("")
        w("def _obj(cls: Any, v: Any) -> Any:")
        w('    """Parse a nested object, keeping None as None."""')
        w("    return None if v is None else cls.from_dict(v)")
        w("")
        w("")
        w("def _objs(cls: Any, v: Any) -> Any:")
        w('    """Parse a list of nested objects, keeping None as None."""')
        w("    return None if v is None else [cls.from_dict(i) for i in v]")
        w("")
        w("")
        w("def _out(v: Any) -> Any:")
        w('    """JSON form of a field value (nested models become dicts)."""')
        w("    if isinstance(v, list):")
        w("        return [_out(i) for i in v]")
        w('    if hasattr(v, "to_dict"):')
        w("        return v.to_dict()")
        w("    return v")
        for cls in self.order:
            origin, sch = self.classes[cls]
            props: Dict[str, Any] = sch.get("properties", {})
            required: Set[str] = set(sch.get("required", []))
            fields = []
            for wire, ps in props.items():
                t, kind, ncls = self.pytype(ps, cls + camel(wire), origin + "." + wire)
                req = wire in required
                nul = self.nullable(ps)
                fields.append((snake(wire), wire, t, kind, ncls, req, nul))
            fields.sort(key=lambda f: 0 if f[5] else 1)
            para = " ".join((sch.get("description") or "").strip().split("\n\n")[0].split())
            desc = re.split(r"(?<=[a-z0-9)`])\. ", para)[0].rstrip(".")
            if origin.startswith("x-webhooks/"):
                desc = "Webhook body of the event " + origin.split("/", 1)[1]
            w("")
            w("")
            w("@dataclass")
            w("class %s:" % cls)
            if desc:
                w('    """%s (OpenAPI %s)."""' % (desc.replace('"', "'").replace("\\", "\\\\"), origin))
            else:
                w('    """The OpenAPI schema %s."""' % origin)
            w("")
            w('    SCHEMA: ClassVar[str] = "%s"' % origin)
            w("    WIRE: ClassVar[Dict[str, str]] = {")
            for f in fields:
                w('        "%s": "%s",' % (f[0], f[1]))
            w("    }")
            w("    REQUIRED: ClassVar[List[str]] = [%s]" % ", ".join('"%s"' % f[1] for f in fields if f[5]))
            w("")
            for py, wire, t, kind, ncls, req, nul in fields:
                if req:
                    w("    %s: %s" % (py, "Optional[%s]" % t if nul else t))
                else:
                    w("    %s: Optional[%s] = None" % (py, t))
            w("")
            w("    @classmethod")
            w("    def from_dict(cls, d: Mapping[str, Any]) -> %s:" % cls)
            w('        """Parse the JSON object; unknown keys are ignored."""')
            w("        return cls(")
            for py, wire, t, kind, ncls, req, nul in fields:
                if kind == "obj":
                    w('            %s=_obj(%s, d.get("%s")),' % (py, ncls, wire))
                elif kind == "list_obj":
                    w('            %s=_objs(%s, d.get("%s")),' % (py, ncls, wire))
                else:
                    w('            %s=_v(d, "%s"),' % (py, wire))
            w("        )")
            w("")
            w("    def to_dict(self) -> Dict[str, Any]:")
            w('        """JSON object: required fields always, optional ones when not None."""')
            w("        out: Dict[str, Any] = {}")
            for py, wire, t, kind, ncls, req, nul in fields:
                if req:
                    w('        out["%s"] = _out(self.%s)' % (wire, py))
                else:
                    w("        if self.%s is not None:" % py)
                    w('            out["%s"] = _out(self.%s)' % (wire, py))
            w("        return out")
        w("")
        w("")
        w("EVENT_TYPES: Dict[str, Type[Any]] = {")
        for event, cls, _ in events:
            w('    "%s": %s,' % (event, cls))
        w("}")
        w('"""Webhook event type (X-Webhook-Event, body field event) to its model."""')
        w("")
        w("PARTNER_OPERATIONS: Dict[str, List[str]] = {")
        for op_id, method, path, _ in partner_operations(self.doc):
            w('    "%s": ["%s", "%s"],' % (op_id, method, path))
        w("}")
        w('"""operationId to [METHOD, path] of every partner operation in the OpenAPI document."""')
        return "\n".join(out) + "\n"


def main() -> None:
    path = sys.argv[1] if len(sys.argv) > 1 else DEFAULT_SPEC
    sys.stdout.write(Gen(load(path)).emit())


if __name__ == "__main__":
    main()

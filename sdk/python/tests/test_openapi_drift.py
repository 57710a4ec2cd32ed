"""One source of truth: the models, the event table and the route table come from
internal/openapi/openapi.yaml, and these tests fail when either side drifts."""

from __future__ import annotations

import ast
import dataclasses
import functools
import importlib.util
import os
import re
from typing import Any, Dict, Iterator, List, Tuple

import yaml

import partner_open_platform as pop
from partner_open_platform import models as m
from partner_open_platform.client import OPERATION_METHODS, PartnerClient

from .conftest import OPENAPI, SDK_DIR

METHODS = ("get", "post", "put", "patch", "delete")
PARTNER_SCHEMES = {"AppId", "schemeH", "oauthBearer", "oauthClient"}


@functools.lru_cache(maxsize=None)
def _doc() -> Dict[str, Any]:
    with open(OPENAPI, "rb") as f:
        d: Dict[str, Any] = yaml.safe_load(f)
    return d


@functools.lru_cache(maxsize=None)
def _gen() -> Any:
    spec = importlib.util.spec_from_file_location("gen_models", os.path.join(SDK_DIR, "tools", "gen_models.py"))
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _partner_ops(doc: Dict[str, Any]) -> Iterator[Tuple[str, str, str]]:
    for path, item in doc["paths"].items():
        for method in METHODS:
            op = item.get(method)
            if op and {k for req in op.get("security", []) for k in req} & PARTNER_SCHEMES:
                yield op["operationId"], method.upper(), path


def test_generated_models_are_current() -> None:
    """Regenerating from the OpenAPI document changes nothing."""
    gen = _gen()
    fresh = gen.Gen(gen.load(OPENAPI)).emit()
    with open(os.path.join(SDK_DIR, "src", "partner_open_platform", "models.py"), encoding="utf-8") as f:
        current = f.read()
    assert fresh == current, "models.py is stale: run python tools/gen_models.py > src/partner_open_platform/models.py"


def test_every_partner_operation_has_a_client_method() -> None:
    doc = _doc()
    ops = {op_id: [method, path] for op_id, method, path in _partner_ops(doc)}
    assert len(ops) >= 27
    assert ops == m.PARTNER_OPERATIONS
    assert set(OPERATION_METHODS) == set(ops), "client route table differs from the document's partner operations"
    for op_id, name in OPERATION_METHODS.items():
        assert callable(getattr(PartnerClient, name, None)), name


def _resolve(doc: Dict[str, Any], where: str) -> Dict[str, Any]:
    """The (allOf-merged) schema a model names: a component, x-webhooks/<event>, or a path inside one."""
    gen = _gen().Gen(doc)
    if where.startswith("x-webhooks/"):
        rest = where[len("x-webhooks/"):]
        events = sorted(doc["x-webhooks"], key=len, reverse=True)
        event = next(e for e in events if rest == e or rest.startswith(e + "."))
        s: Dict[str, Any] = doc["x-webhooks"][event]["post"]["requestBody"]["content"]["application/json"]["schema"]
        steps = rest[len(event):]
    else:
        name = re.match(r"[A-Za-z0-9]+", where)
        assert name is not None
        s = doc["components"]["schemas"][name.group(0)]
        steps = where[len(name.group(0)):]
    for step in re.findall(r"\.[a-z_A-Z0-9]+|\[\]", steps):
        s = gen.merged(s)
        if step == "[]":
            s = s["items"]
        else:
            s = s["properties"][step[1:]]
    merged: Dict[str, Any] = gen.merged(s)
    return merged


def _model_classes() -> List[Any]:
    return [c for c in vars(m).values() if isinstance(c, type) and dataclasses.is_dataclass(c) and hasattr(c, "SCHEMA")]


def test_model_fields_match_schema_properties() -> None:
    """Independently of the generator: each model's JSON names and required list are the schema's."""
    doc = _doc()
    classes = _model_classes()
    assert len(classes) >= 60
    for cls in classes:
        s = _resolve(doc, cls.SCHEMA)
        props = set(s.get("properties", {}))
        assert set(cls.WIRE.values()) == props, cls.__name__
        assert set(cls.REQUIRED) == set(s.get("required", [])) & props, cls.__name__
        assert [f.name for f in dataclasses.fields(cls)] and {f.name for f in dataclasses.fields(cls)} == set(cls.WIRE), cls.__name__


def test_every_webhook_event_is_typed() -> None:
    doc = _doc()
    assert set(m.EVENT_TYPES) == set(doc["x-webhooks"])
    for event, cls in m.EVENT_TYPES.items():
        example = _example(doc, _resolve(doc, cls.SCHEMA), event)
        parsed = pop.parse_event(example)
        assert isinstance(parsed, cls), event
        assert parsed.to_dict() == example, event


def _example(doc: Dict[str, Any], s: Dict[str, Any], event: str) -> Any:
    """A value of every property of the schema (its example when given), built recursively."""
    gen = _gen().Gen(doc)
    s = gen.merged(s)
    if "properties" in s:
        out = {}
        for k, p in s["properties"].items():
            out[k] = event if k == "event" else _example(doc, p, event)
        return out
    t = s.get("type")
    if "example" in s:
        return s["example"]
    if "enum" in s:
        return s["enum"][0]
    if t == "array":
        return [_example(doc, s.get("items", {}), event)]
    return {"integer": 1, "number": 1.5, "boolean": True, "string": "x"}.get(t or "", {"k": "v"})


def test_unknown_events_are_kept_whole() -> None:
    ev = pop.parse_event(b'{"event":"future.thing","delivery_id":"d-1","x":1}')
    assert isinstance(ev, pop.UnknownEvent)
    assert ev.event == "future.thing" and ev.delivery_id == "d-1" and ev.raw["x"] == 1


def test_sources_parse_as_python_3_9() -> None:
    """Python 3.9 is the floor: no syntax newer than 3.9 anywhere in the package."""
    pkg = os.path.join(SDK_DIR, "src", "partner_open_platform")
    files = [f for f in os.listdir(pkg) if f.endswith(".py")]
    assert files
    for f in files:
        with open(os.path.join(pkg, f), encoding="utf-8") as fh:
            src = fh.read()
        ast.parse(src, filename=f, feature_version=(3, 9))
        assert "from __future__ import annotations" in src, f


def test_the_installed_package_is_tested() -> None:
    """Under test.sh the suite must exercise the built wheel, not the source tree."""
    if os.environ.get("PARTNER_SDK_EXPECT_INSTALLED") != "1":
        return
    assert "site-packages" in pop.__file__, pop.__file__
    assert os.path.exists(os.path.join(os.path.dirname(pop.__file__), "py.typed"))

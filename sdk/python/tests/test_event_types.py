"""The platform's event catalog: every catalogued type's example body (made by
the dispatcher's renderer) parses into its typed event."""

from __future__ import annotations

import os

import partner_open_platform as pop
from partner_open_platform import models as m

from .conftest import REPO_ROOT


def test_every_catalogued_event_parses_typed() -> None:
    assert len(pop.EVENT_CATALOG) >= 11
    for t in pop.EVENT_CATALOG:
        path = os.path.join(REPO_ROOT, "internal", "eventtypes", "examples", f"{t.name}.v{t.version}.json")
        with open(path, "rb") as f:
            ev = pop.parse_event(f.read())
        assert not isinstance(ev, pop.UnknownEvent), t.name
        assert ev.event == t.name
        assert ev.delivery_id
        assert pop.is_catalogued_event_type(t.name)
    assert sorted(m.EVENT_TYPES) == sorted(t.name for t in pop.EVENT_CATALOG)


def test_an_uncatalogued_type_is_unknown() -> None:
    assert not pop.is_catalogued_event_type("health.report.deleted")
    ev = pop.parse_event(b'{"event":"health.report.deleted","delivery_id":"d-1"}')
    assert isinstance(ev, pop.UnknownEvent) and ev.event == "health.report.deleted"
